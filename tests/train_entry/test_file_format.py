"""A file cpt-sweep writes carries its format version and writer first, and is read back only at that version."""

from __future__ import annotations

import json

import pytest

from train_entry.config import StrictConfig
from train_entry.file_format import FORMAT_KEY, WRITER_KEY, WRITTEN_BY, FileFormat, FormatError

RECORD = FileFormat("test record", 3, "write it again")


class Record(StrictConfig):
    name: str
    steps: int


def test_a_record_is_written_with_its_version_first_and_read_back_equal(tmp_path):
    path = tmp_path / "record.json"
    path.write_text(RECORD.dumps(Record(name="a", steps=2)))
    assert list(json.loads(path.read_text())) == [FORMAT_KEY, WRITER_KEY, "name", "steps"]
    assert json.loads(path.read_text())[WRITER_KEY] == WRITTEN_BY and WRITTEN_BY.startswith("cpt-sweep ")
    assert RECORD.read(path, Record) == Record(name="a", steps=2)


OTHER_VERSIONS = {
    "no version": ({}, f"no {FORMAT_KEY} (written by an earlier development version of cpt-sweep, or not by it)"),
    "an older version": (
        {FORMAT_KEY: 2, WRITER_KEY: "cpt-sweep 0.0.9"},
        "test record format 2 (written by cpt-sweep 0.0.9)",
    ),
    "a future version": ({FORMAT_KEY: 4}, "test record format 4 (written by another cpt-sweep)"),
    "a string": ({FORMAT_KEY: "3"}, f"{FORMAT_KEY} '3' is not a version (an integer)"),
    "a float": ({FORMAT_KEY: 3.0}, f"{FORMAT_KEY} 3.0 is not a version (an integer)"),
    "a boolean": ({FORMAT_KEY: True}, f"{FORMAT_KEY} True is not a version (an integer)"),
}


@pytest.mark.parametrize(("stamp", "said"), OTHER_VERSIONS.values(), ids=list(OTHER_VERSIONS))
def test_another_version_is_refused_naming_the_file_what_was_found_and_what_this_build_reads(stamp, said, tmp_path):
    path = tmp_path / "record.json"
    path.write_text(json.dumps({**stamp, "name": "a", "steps": 2}))
    with pytest.raises(FormatError) as refused:
        RECORD.read(path, Record)
    assert str(refused.value) == f"{path}: {said}; this {WRITTEN_BY} reads test record format 3 only: write it again"


def test_a_writer_that_is_not_text_is_quoted_short(tmp_path):
    path = tmp_path / "record.json"
    path.write_text(json.dumps({FORMAT_KEY: 9, WRITER_KEY: "x" * 10_000}))
    with pytest.raises(FormatError, match=r"\(10,002 characters\)") as refused:
        RECORD.read(path, Record)
    assert len(str(refused.value)) < 400


def test_a_file_that_is_not_a_json_object_is_refused_as_not_ours(tmp_path):
    path = tmp_path / "record.json"
    path.write_text("[3]")
    with pytest.raises(FormatError, match=r"record.json is not a test record cpt-sweep wrote: not an object of keys"):
        RECORD.read(path, Record)


def test_a_model_cannot_have_a_key_of_the_stamp():
    with pytest.raises(ValueError, match="no key of its own named format_version"):
        RECORD.dumps_data({FORMAT_KEY: 1})
