"""A table of runs from a CSV file is untrusted input: every column named and typed, every bound checked, and a bad
file, row or column refused with its path, line and column."""

from __future__ import annotations

import os

import pytest

from sweep.law import csv as law_csv
from sweep.law.csv import read_runs_csv
from sweep.law.table import LawInputError

HEADER = (
    "rung,trial,seed,parameters,pretrain_tokens,tokens,lr_fraction,lr_mean,mix,general_loss,domain_loss,"
    "base_general_loss,base_domain_loss"
)
ROW = "m,{trial},0,738432,2457600,51200,0.1,0.97,4:1,3.4121,4.2011,3.4011,4.3302"


def write(tmp_path, *lines: str, name: str = "runs.csv"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_table_of_runs_reads_as_typed_rows(tmp_path):
    path = write(tmp_path, HEADER, ROW.format(trial=0), "", ROW.format(trial=1).replace(",4:1,", ",1:1,"))
    table = read_runs_csv(path)
    assert len(table) == 2 and table.rungs == ["m"] and table.trials == 2
    assert list(table.domain_share) == [0.2, 0.5]
    assert table.forgetting[0] == pytest.approx(3.4121 / 3.4011 - 1)
    assert table.lr_area[0] == pytest.approx(0.1 * 0.97 * 51200 / 2457600)


def test_the_seed_column_may_be_left_out(tmp_path):
    header = HEADER.replace("seed,", "")
    path = write(tmp_path, header, ROW.format(trial=0).replace(",0,738432", ",738432"))
    assert read_runs_csv(path).rows[0].seed == 0


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([HEADER.replace(",lr_mean", "")], "line 1: missing column(s) 'lr_mean'; the columns are rung, trial"),
        ([HEADER + ",note"], "line 1: unknown column(s) 'note'"),
        ([HEADER + ",mix"], "line 1: repeated column(s) 'mix'"),
        (
            [HEADER, ROW.format(trial=0).replace("51200", "many")],
            "line 2, column 'tokens': Input should be a valid number",
        ),
        (
            [HEADER, ROW.format(trial=0).replace("3.4121", "-1")],
            "line 2, column 'general_loss': Input should be greater",
        ),
        (
            [HEADER, ROW.format(trial=0).replace("4.2011", "nan")],
            "line 2, column 'domain_loss': Input should be a finite",
        ),
        ([HEADER, ROW.format(trial=0).replace("0.1,", "1.5,")], "line 2, column 'lr_fraction': Input should be less"),
        ([HEADER, ROW.format(trial=0).replace("4:1", "4-1")], "line 2, column 'mix': mix ratio must be"),
        ([HEADER, ROW.format(trial="../x")], "line 2, column 'trial': String should match pattern"),
        ([HEADER, ROW.format(trial=0), "m,1,0,738432"], "line 3: 4 fields, but the header names 13"),
        (
            [HEADER, ROW.format(trial=0), ROW.format(trial=1).replace("738432", "302496")],
            "line 3, column 'parameters': 302496, but line 2 of rung 'm' gives 738432; a rung is one model size",
        ),
        ([], "empty; the first line names the columns"),
        ([HEADER], "no evaluations to fit a law to"),
    ],
)
def test_a_bad_file_row_or_column_is_refused_naming_it(tmp_path, lines, message):
    path = write(tmp_path, *lines) if lines else tmp_path / "runs.csv"
    if not lines:
        path.write_text("")
    with pytest.raises(LawInputError) as error:
        read_runs_csv(path)
    text = str(error.value)
    assert text.startswith(f"{path}: ") and message in text
    assert "\n" not in text


def test_what_is_no_text_table_is_refused(tmp_path, monkeypatch):
    binary = tmp_path / "runs.csv"
    binary.write_bytes(b"rung,trial\n\xff\xfe\x00")
    with pytest.raises(LawInputError, match="not UTF-8 text"):
        read_runs_csv(binary)
    with pytest.raises(LawInputError, match="not a readable file"):
        read_runs_csv(tmp_path)
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)  # would block a reader that opened it
    with pytest.raises(LawInputError, match="not a readable file"):
        read_runs_csv(fifo)
    monkeypatch.setattr(law_csv, "MAX_BYTES", 100)
    large = write(tmp_path, HEADER, ROW.format(trial=0), name="large.csv")
    with pytest.raises(LawInputError, match="bytes, more than a table of runs may hold"):
        read_runs_csv(large)


def test_a_table_longer_than_the_fit_takes_in_two_minutes_is_refused_before_the_rest_is_read(tmp_path, monkeypatch):
    """The malformed line after the bound is never reached: the row past it is refused first."""
    monkeypatch.setattr(law_csv, "MAX_ROWS", 2)
    path = write(tmp_path, HEADER, *(ROW.format(trial=trial) for trial in range(3)), "not,a,row")
    with pytest.raises(LawInputError) as error:
        read_runs_csv(path)
    assert str(error.value) == (
        f"{path}: more than 2 rows, more than the law is fitted to within 2 minutes; fit a sample of the trials, or "
        "fewer evaluations per trial"
    )
