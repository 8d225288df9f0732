"""Every file a run directory names has a format version in sweep/files/compat.py, or a reason to have none."""

from __future__ import annotations

import re

from sweep.files import compat
from sweep.files.rundir import In, PlanDir, RunDir
from tests.conftest import REPO
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


def _documented_versions() -> list[tuple[str, str]]:
    """docs/guarantees.md's "Format versions" table: (its file cell, its version cell) a row."""
    text = (REPO / "docs" / "guarantees.md").read_text(encoding="utf-8")
    table = text.split("## Format versions", 1)[1].split("\n\n", 2)[1]
    return [(cells[1], cells[2].strip()) for cells in (row.split("|") for row in table.splitlines()[2:])]


def _rows_naming(rows: list[tuple[str, str]], path: str) -> list[tuple[str, str]]:
    """The rows naming a file of compat.FILES: by its whole path (written before the row's parenthesis), else by its
    last part; a study's user attribute by `user attr `name``."""
    attribute = re.search(r"user attr '(\w+)'", path)
    if attribute:
        return [row for row in rows if f"user attr `{attribute[1]}`" in row[0]]

    def named(cell: str) -> list[str]:
        return re.findall(r"`([^`]+)`", cell.split("(", 1)[0])

    whole = [row for row in rows if path.strip("`") in named(row[0])]
    return whole or [row for row in rows if path.rsplit("/", 1)[-1] in named(row[0])]


def test_the_documented_format_versions_are_the_versions_written():
    """Each file of compat.FILES has one row in docs/guarantees.md's table, with the version the code writes (it
    said 1 for trial_config.json and trials.parquet after both went to 2), and no row names a file the code lacks."""
    rows = _documented_versions()
    named = set()
    for path, fmt in compat.FILES.items():
        found = _rows_naming(rows, path)
        assert len(found) == 1, f"{path}: {len(found)} rows of docs/guarantees.md name it"
        assert found[0][1] == str(fmt.version), f"{path}: documented {found[0][1]}, written {fmt.version}"
        named.add(found[0][0])
    assert named == {cell for cell, _ in rows}
