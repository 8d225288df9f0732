"""An error message is read by a person: each line is cut to a readable length, its full length said."""

from __future__ import annotations

from cli import main
from cli.errors import MOST_LINE_CHARACTERS, readable


def test_an_error_line_is_cut_to_a_readable_length():
    first, second = readable("x" * 1_000_000 + "\nshort").splitlines()
    assert len(first) < MOST_LINE_CHARACTERS + 40 and first.endswith("... (1,000,000 characters)") and second == "short"


def test_a_refusal_naming_a_huge_value_prints_one_short_line(tmp_path, capsys):
    huge = tmp_path / ("y" * 200) / ("x" * 200) / ("z" * 200) / ("w" * 200) / ("v" * 200) / "runs.csv"
    assert main(["law", "fit", str(huge), "--target", "llama3.1-70b", "--refits", "0"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert len(line) <= len("error: ") + MOST_LINE_CHARACTERS + 40
