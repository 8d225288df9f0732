"""Every writing command follows one set of output rules (sweep.files.outputs): `sweep report --output` as `sweep law
fit --output` (tests/sweep/law/test_law_cli_input.py), and a report's own folders are real folders, never a link out
of the run or a file in their place. Each refusal is exit 2 naming the path, before anything is read or written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cli import main
from reports import report as report_module
from sweep.files.outputs import OutputError, check_output
from tests.hostile import tree
from tests.sweep.promote.promote_runs import write_run


@pytest.fixture
def no_report(monkeypatch):
    """A refused --output must come before the run is read: reading it fails the test."""

    def load_run(*args, **kwargs):
        raise AssertionError("the run was read before the output was refused")

    monkeypatch.setattr(report_module, "load_run", load_run)


@pytest.fixture
def run_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return write_run(tmp_path / "runs" / "lr_mix").relative_to(tmp_path)


def refused(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    return line


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("", "no folder named"),
        (".", "no folder named"),
        ("runs/lr_mix", "the run directory 'runs/lr_mix' itself"),
        ("runs/lr_mix/trials", "inside the run directory 'runs/lr_mix'"),
        ("runs/lr_mix/report", "inside the run directory 'runs/lr_mix'"),
        ("kept", "the folder holds files (--force replaces them)"),
        ("fifo", "not a folder (a file, a link, a device or another special file)"),
        ("/dev/null", "not a folder"),
        ("link", "not a folder"),
        ("missing/report", "its folder 'missing' does not exist"),
        ("x" * 300, "cannot be used (File name too long)"),
    ],
)
def test_report_output_follows_the_output_rules_before_reading_the_run(
    output, message, run_dir, tmp_path, capsys, no_report
):
    """Found by hand (issue 52): --output DIR replaced DIR's index.html and report.md, --output "" wrote into the
    current folder, --output RUN into the run's own records, and --output onto a FIFO was a FileExistsError."""
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "index.html").write_text("a page someone keeps\n")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    before = tree(tmp_path)
    line = refused(["report", str(run_dir), "--output", output], capsys)
    assert line.startswith(f"error: --output {str(Path(output))!r}: ") and message in line, line
    assert line.endswith("name a new folder in a writable folder")
    assert tree(tmp_path) == before


def test_report_output_with_force_writes_into_a_folder_that_holds_files(run_dir, tmp_path):
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "index.html").write_text("an earlier page\n")
    assert main(["report", str(run_dir), "--output", "kept", "--force"]) == 0
    assert "<html" in (tmp_path / "kept" / "index.html").read_text()


def test_report_output_into_a_new_or_empty_folder_needs_no_force(run_dir, tmp_path):
    (tmp_path / "empty").mkdir()
    assert main(["report", str(run_dir), "--output", "empty"]) == 0
    assert main(["report", str(run_dir), "--output", "new"]) == 0
    assert (tmp_path / "new" / "index.html").is_file() and (tmp_path / "empty" / "report.md").is_file()


@pytest.mark.parametrize("kind", ["link out", "file"])
def test_a_run_report_folder_that_is_not_a_real_folder_of_the_run_is_refused(kind, run_dir, tmp_path, capsys):
    (tmp_path / "elsewhere").mkdir()
    report = run_dir / "report"
    if kind == "file":
        report.write_text("not a folder\n")
    else:
        report.symlink_to(tmp_path / "elsewhere")
    before = tree(tmp_path)
    line = refused(["report", str(run_dir)], capsys)
    assert line.startswith(f"error: {report} is not a folder") and "real folders under runs/lr_mix" in line
    assert tree(tmp_path) == before


@pytest.mark.parametrize("kind", ["link out", "file"])
def test_a_comparison_folder_that_is_not_a_real_folder_is_refused(kind, run_dir, tmp_path, capsys):
    """Found by hand (issue 52): a comparison folder that is a symlink got the page written into its target; one that
    is a file was a NotADirectoryError."""
    (tmp_path / "elsewhere").mkdir()
    compare = tmp_path / "runs" / "compare-lr_mix-vs-lr_mix"
    if kind == "file":
        compare.write_text("not a folder\n")
    else:
        compare.symlink_to(tmp_path / "elsewhere")
    before = tree(tmp_path)
    line = refused(["report", str(run_dir), str(run_dir)], capsys)
    assert line.startswith("error: runs/compare-lr_mix-vs-lr_mix is not a folder"), line
    assert tree(tmp_path) == before


def test_a_link_left_where_a_file_is_written_is_replaced_not_followed(run_dir, tmp_path):
    """A run directory received from someone may hold links named as the report's files or their hidden siblings."""
    target = tmp_path / "precious.txt"
    target.write_text("kept\n")
    report = run_dir / "report"
    report.mkdir()
    (report / "index.html").symlink_to(target)
    (report / ".report.md.tmp").symlink_to(target)
    assert main(["report", str(run_dir)]) == 0
    assert target.read_text() == "kept\n"
    assert not (report / "index.html").is_symlink() and "<html" in (report / "index.html").read_text()


def test_the_rules_are_one_function_for_files_and_folders(tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text("rung\n")
    with pytest.raises(OutputError, match="the runs file itself"):
        check_output(runs, inputs={runs: "the runs file"}, force=True)
    with pytest.raises(OutputError, match="not a regular file"):
        check_output(tmp_path, inputs={}, force=True)
    with pytest.raises(OutputError, match="not a folder"):
        check_output(runs, inputs={}, force=True, folder=True)
    check_output(tmp_path / "new.json", inputs={runs: "the runs file"}, force=False)



@pytest.mark.parametrize(("output", "message"), [("kept", "the folder holds files"), ("", "no folder named")])
def test_trial_output_follows_the_output_rules_before_the_spec_is_read(output, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "result.json").write_text("an earlier trial's\n")
    before = tree(tmp_path)
    argv = ["trial", "no-such-spec.yaml", "--lr-fraction", "0.1", "--mix", "1:1", "--output", output]
    line = refused(argv, capsys)
    assert line.startswith(f"error: --output {str(Path(output))!r}: {message}") and tree(tmp_path) == before
