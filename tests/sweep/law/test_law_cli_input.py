"""`sweep law fit` takes any table and any option safely (issue 41): `--output` never writes over a folder, a device,
a link, the runs file or (without --force) an existing file, and is checked before the fit; numbers out of range are
argparse's own one-line error; a degenerate table is refused with its file and line before any fitting; random
damage to a valid CSV is a table or one LawInputError, never a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli import main
from sweep.law import runs as law_runs
from sweep.law.checks import check_fittable
from sweep.law.csv import read_runs_csv
from sweep.law.table import LawInputError
from tests.fuzzing import LONG, SHORT, damaged
from tests.hostile import tree
from tests.sweep.ladder.synthetic import RUNGS, as_csv, draw
from tests.sweep.law.test_law_cli import EXAMPLE

FIT = ["law", "fit", str(EXAMPLE), "--target", "llama3.1-70b", "--refits", "2"]


@pytest.fixture
def no_fit(monkeypatch):
    """A refusal must come before the fit: reaching it fails the test."""

    def fit_runs(*args, **kwargs):
        raise AssertionError("the law was fitted before the input was refused")

    monkeypatch.setattr(law_runs, "fit_runs", fit_runs)


def refused(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    return line


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("{tmp}", "not a regular file (a folder, a link, a device or another special file)"),
        ("", "no file named"),
        ("/dev/null", "not a regular file"),
        ("{tmp}/link.json", "not a regular file"),
        ("{tmp}/runs.csv", "the runs file itself"),
        ("{tmp}/earlier.json", "the file exists (--force replaces it)"),
        ("{tmp}/missing/law.json", "its folder '{tmp}/missing' does not exist"),
        ("/proc/law.json", "cannot create a file in '/proc'"),
    ],
)
def test_an_output_that_is_not_a_new_file_is_refused_before_the_fit(output, message, tmp_path, capsys, no_fit):
    runs = tmp_path / "runs.csv"
    shutil.copy(EXAMPLE, runs)
    (tmp_path / "earlier.json").write_text("an earlier report\n")
    (tmp_path / "link.json").symlink_to(tmp_path / "earlier.json")
    before = tree(tmp_path)
    path = output.format(tmp=tmp_path)
    line = refused(["law", "fit", str(runs), "--target", "llama3.1-70b", "--output", path], capsys)
    assert line.startswith(f"error: --output {str(Path(path)) if path else ''!r}: ") or line.startswith(
        "error: --output '.': "
    )
    assert message.format(tmp=tmp_path) in line and line.endswith("name a new file in a writable folder")
    assert tree(tmp_path) == before
    assert Path("/dev/null").is_char_device()


def test_force_replaces_an_existing_regular_file_and_nothing_else(tmp_path, capsys):
    report = tmp_path / "law.json"
    report.write_text("an earlier report\n")
    assert main([*FIT, "--output", str(report), "--force"]) == 0
    assert report.read_text().startswith("{") and [p.name for p in tmp_path.iterdir()] == ["law.json"]
    assert f"report: {report}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--tokens", "1e30", "argument --tokens: must be at most 1e+15, got '1e30'"),
        ("--tokens", "0", "argument --tokens: must be a positive integer, got '0'"),
        ("--refits", "100000", "argument --refits: must be a whole number from 0 to 10,000, got '100000'"),
        ("--refits", "-1", "argument --refits: must be a whole number from 0 to 10,000, got '-1'"),
        ("--min-probability", "1", "argument --min-probability: must be a probability in (0, 1), got '1'"),
    ],
)
def test_numbers_out_of_range_are_argparses_own_error(flag, value, message, capsys, no_fit):
    with pytest.raises(SystemExit) as exit_:
        main([*FIT, flag, value])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_a_target_too_large_for_the_law_is_refused_with_its_size(tmp_path, capsys, no_fit):
    target = tmp_path / "huge.yaml"
    target.write_text(
        "name: huge\npretrain_tokens: 1.0e+13\nmodel: {num_layers: 1000, hidden_size: 65536, ffn_hidden_size: "
        "262144, num_attention_heads: 512, num_query_groups: 8, vocab_size: 128256, seq_length: 8192}\n"
    )
    line = refused(["law", "fit", str(EXAMPLE), "--target", str(target)], capsys)
    assert line.startswith("error: target huge: ") and "non-embedding parameters, outside the 1000 to 1e+13" in line


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda text: text.replace(",3.200000,3.900000\n", ",1e-300,3.900000\n", 1), "line 2, column 'base_gen"),
        (lambda text: text + text.splitlines()[7] + "\n", "line 434 repeats line 8: rung 'xs', trial '1' at"),
        (lambda text: as_csv(draw(rungs={"m": RUNGS["m"]})), "every row has N = 7.384e+05"),
        (lambda text: "\n".join(text.splitlines()[:12]) + "\n", "11 evaluations; a law of seven parameters"),
    ],
)
def test_a_degenerate_table_is_refused_naming_the_file_before_the_fit(edit, message, tmp_path, capsys):
    runs = _write(tmp_path / "runs.csv", edit(EXAMPLE.read_text()))
    before = tree(tmp_path)
    line = refused(["law", "fit", str(runs), "--target", "llama3.1-70b", "--refits", "0"], capsys)
    assert line.startswith(f"error: {runs}: ") and message in line
    assert tree(tmp_path) == before


def test_losses_that_never_change_leave_nothing_to_fit(tmp_path):
    table = draw(rungs={"xs": RUNGS["xs"], "s": RUNGS["s"]})
    flat = table.take(
        slice(None), general_loss=table.base_general_loss.copy(), domain_loss=table.base_domain_loss.copy()
    )
    with pytest.raises(LawInputError, match="every row has the same forgetting .0: each loss over its base's"):
        check_fittable(flat, "runs.csv")


SMALL = "\n".join(as_csv(draw(rungs={"xs": RUNGS["xs"], "s": RUNGS["s"]})).splitlines()[:40]) + "\n"
"""A valid table of 39 rows: small enough that damage lands anywhere in it."""


def read_damaged(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.csv"
    path.write_bytes(data)
    try:
        table = read_runs_csv(path)
        check_fittable(table, str(path))
    except LawInputError as error:
        assert str(error).startswith(f"{path}: ") and "\n" not in str(error)


@SHORT
@given(data=st.data())
def test_random_damage_to_a_law_csv_is_a_table_or_one_line_of_error(tmp_path, data):
    read_damaged(tmp_path, data.draw(damaged(SMALL.encode())))


@pytest.mark.slow
@LONG
@given(data=st.data())
def test_long_fuzz_of_the_law_csv(tmp_path, data):
    read_damaged(tmp_path, data.draw(damaged(SMALL.encode())))
