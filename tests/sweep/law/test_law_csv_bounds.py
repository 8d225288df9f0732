"""A table of runs is bounded where it is read: each column at least its floor (a token, a millionth of a peak LR,
MIN_LOSS nats), the header one short line; each refusal exit 2 in one short line before any fitting (issue 52: 1e-300
in tokens, lr_fraction, lr_mean or pretrain_tokens, and 5e-324, were scipy or pydantic tracebacks after the fit
started, and a header of one 1 MB line took 98 s and printed a 1 MB error)."""

from __future__ import annotations

import pytest

from cli import main
from sweep.law.csv import FLOORS, MAX_LINE_CHARACTERS, MAX_LINES, MAX_ROWS, read_runs_csv
from sweep.law.table import LawInputError
from tests.sweep.law.test_law_csv import HEADER, ROW, write

COLUMNS = HEADER.split(",")


def with_value(column: str, value: str) -> str:
    fields = ROW.format(trial=0).split(",")
    fields[COLUMNS.index(column)] = value
    return ",".join(fields)


BELOW = [(column, value) for column in FLOORS for value in ("1e-300", "5e-324", f"{FLOORS[column] / 2:g}")]


@pytest.mark.parametrize(("column", "value"), BELOW)
def test_a_value_below_its_columns_floor_is_refused_naming_the_floor(column, value, tmp_path):
    path = write(tmp_path, HEADER, with_value(column, value))
    with pytest.raises(LawInputError) as raised:
        read_runs_csv(path)
    assert str(raised.value).startswith(f"{path}: line 2, column {column!r}: '{value}' is below {FLOORS[column]:g}")


@pytest.mark.parametrize("column", ["tokens", "lr_fraction", "lr_mean", "pretrain_tokens"])
def test_law_fit_refuses_a_tiny_value_before_fitting(column, tmp_path, capsys):
    """Read at once (fit_runs reads the table before fitting), not after the fit has started."""
    path = write(tmp_path, HEADER, with_value(column, "1e-300"))
    assert main(["law", "fit", str(path), "--target", "llama3.1-70b", "--refits", "0"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"column {column!r}: '1e-300' is below" in line


def test_values_at_their_floors_are_fitted_without_a_traceback(tmp_path, capsys):
    from tests.sweep.law.test_law_cli import EXAMPLE

    lines = EXAMPLE.read_text().splitlines()
    fields = lines[4].split(",")
    for column, floor in FLOORS.items():
        fields[COLUMNS.index(column)] = f"{floor:g}"
    path = tmp_path / "runs.csv"
    path.write_text("\n".join([*lines[:4], ",".join(fields), *lines[5:]]) + "\n")
    assert main(["law", "fit", str(path), "--target", "llama3.1-70b", "--refits", "2"]) in (0, 2)
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.timeout(60)
@pytest.mark.parametrize("size", [1 << 20, 10 << 20])
def test_a_header_of_one_long_line_is_refused_at_once_in_one_short_line(size, tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("a," * (size // 2) + "\n" + ROW.format(trial=0) + "\n")
    with pytest.raises(LawInputError) as raised:
        read_runs_csv(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: line 1 is longer than {MAX_LINE_CHARACTERS:,} characters")
    assert len(message) < 400


@pytest.mark.parametrize(
    "row",
    ['"' + "a" * (2 << 20), "1," * (1 << 20), ("x" * 100_000 + ",") * 12 + "x"],
    ids=["one quoted field", "a million fields", "13 long fields"],
)
def test_a_row_of_one_long_line_is_refused_at_its_line_without_reading_it_whole(row, tmp_path):
    """A 60 MB row of one quoted field took 7 s to refuse, and a row of 600 fields of 100,000 characters 9 s."""
    path = write(tmp_path, HEADER, ROW.format(trial=0), row, ROW.format(trial=1))
    with pytest.raises(LawInputError) as raised:
        read_runs_csv(path)
    assert str(raised.value) == (
        f"{path}: line 3 is longer than {MAX_LINE_CHARACTERS:,} characters, not a row of a table of runs"
    )


@pytest.mark.parametrize("blank", ["", ",,,", " "])
def test_a_table_of_more_lines_than_rows_it_may_hold_is_refused_at_its_bound(blank, tmp_path):
    """60 MB of blank lines (or of lines of empty fields) took 44 s to find no rows in."""
    path = write(tmp_path, HEADER, ROW.format(trial=0), *[blank] * MAX_LINES)
    with pytest.raises(LawInputError) as raised:
        read_runs_csv(path)
    assert str(raised.value).startswith(f"{path}: more than {MAX_LINES:,} lines, more than a table of at most")
    assert MAX_LINES >= 2 * MAX_ROWS  # a table at its most rows, a blank line after each, still reads


def test_unknown_column_names_are_shortened(tmp_path):
    path = write(tmp_path, HEADER + "," + "x" * 500, ROW.format(trial=0) + ",1")
    with pytest.raises(LawInputError) as raised:
        read_runs_csv(path)
    assert "unknown column(s) 'xxx" in str(raised.value) and len(str(raised.value)) < 400
