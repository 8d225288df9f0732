"""report_lines finds the lines a validation report begins in by one scan of a log's whole text, numbered as reading
it line by line numbers them (issue 52: 10 million empty lines, read one by one, took 11 s before any was refused)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzzing import SHORT
from train_entry.megatron.megatron_log import read_validation, report_lines, validation_line

PIECES = st.sampled_from(
    ["\n", "", " ", "x", "validation", " loss at ", "validation loss at ", "validation-1 loss at ", "avalidation"]
)


def line_by_line(text: str) -> list[tuple[int, str]]:
    """What the watch read before: every line, each asked whether a report begins in it."""
    found = []
    for number, line in enumerate(text.split("\n"), 1):
        try:
            report = read_validation(line) is not None
        except ValueError:
            report = True
        if report:
            found.append((number, line))
    return found


@SHORT
@given(st.lists(st.one_of(PIECES, st.builds(validation_line, st.integers(0, 3), st.integers(0, 99), st.floats()))))
def test_the_lines_found_by_one_scan_are_those_read_line_by_line(pieces):
    text = "".join(pieces)
    assert list(report_lines(text)) == line_by_line(text)


def test_a_report_after_millions_of_lines_is_found_at_its_line():
    line = validation_line(1, 20, 2.5)
    text = "\n" * 3_000_000 + "noise " * 1000 + "\n" + line + " " + line + "\n" * 10
    assert list(report_lines(text)) == [(3_000_002, f"{line} {line}")]
