"""Every file a run directory names has a format version in sweep/files/compat.py, or a reason to have none."""

from __future__ import annotations

from sweep.files import compat
from sweep.files.rundir import In, PlanDir, RunDir
from train_entry.file_format import FileFormat


def _names(directory: type) -> set[str]:
    return {value.name for value in vars(directory).values() if isinstance(value, In)}


def test_every_file_of_a_run_directory_has_a_format_or_is_exempt():
    assert _names(RunDir) - set(compat.FILES) == compat.EXEMPT


def test_every_file_of_a_plan_directory_has_a_format_or_is_exempt():
    versioned = {path.removeprefix("promotion/<id>/") for path in compat.FILES if path.startswith("promotion/<id>/")}
    assert _names(PlanDir) - versioned == compat.PLAN_EXEMPT


def test_every_format_has_a_version_and_a_remedy_and_is_listed():
    formats = {value for value in vars(compat).values() if isinstance(value, FileFormat)}
    assert formats == set(compat.FILES.values())
    assert all(fmt.version >= 1 and fmt.remedy for fmt in formats)
    assert len({fmt.what for fmt in formats}) == len(formats)  # a message says which kind of file
