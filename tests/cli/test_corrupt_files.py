"""Every file a command reads back is untrusted: a corrupt one is exit 2 naming it, never a traceback,
and the read-only commands create nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import optuna
import pytest

from cli import main
from sweep.files.compat import BEST, FORMAT_KEY, PLAN, RUN_RECORD, STUDY_PLAN, TRIAL_BASE, TRIAL_CONFIG
from sweep.files.records import CorruptFile
from sweep.files.rundir import RunDir, RunRecord
from sweep.promote.plan.plan import Plan
from sweep.study.record import Attr
from sweep.study.study import PLAN_ATTR, open_study
from sweep.study.trial import run_study_trial
from tests.sweep.promote.promote_runs import write_run
from tests.sweep.scripted import BASE, STEPS, scripted, spec_with

CORRUPT_JSON = {
    "not JSON": "{study_name: oops",
    "empty object": "{}",
    "a list": "[]",
    "wrong types": RUN_RECORD.dumps_data({"study_name": 7, "storage": ["x"]}),
    "unknown key": RUN_RECORD.dumps_data({"study_name": "r", "storage": None, "extra": 1}),
}


def snapshot(root: Path) -> list[Path]:
    return sorted(root.rglob("*"))


@pytest.mark.parametrize("content", CORRUPT_JSON.values(), ids=list(CORRUPT_JSON))
@pytest.mark.parametrize("verb", ["status", "report"])
def test_a_corrupt_run_record_is_exit_2_naming_it(verb, content, tmp_path, capsys):
    run = RunDir(tmp_path / "runs" / "r")
    run.path.mkdir(parents=True)
    run.run_json.write_text(content)
    before = snapshot(tmp_path)
    assert main([verb, str(run.path)]) == 2
    error = capsys.readouterr().err
    assert str(run.run_json) in error and len(error.strip().splitlines()) == 1
    assert snapshot(tmp_path) == before


def test_an_oversized_run_record_is_refused_unread(tmp_path, capsys):
    run = RunDir(tmp_path / "r")
    run.path.mkdir()
    run.run_json.write_text('{"study_name": "' + "x" * 100_000 + '"}')
    assert main(["status", str(run.path)]) == 2
    assert "more than a run record ever holds" in capsys.readouterr().err


def test_a_study_plan_that_is_not_ours_is_exit_2(tmp_path, capsys):
    run = RunDir(tmp_path / "r")
    run.path.mkdir()
    run.write_record(RunRecord(study_name="r", storage=None))
    study = optuna.create_study(study_name="r", storage=f"sqlite:///{run.study_db}")
    study.set_user_attr(PLAN_ATTR, STUDY_PLAN.stamped({"search": "not a search"}))
    before = snapshot(tmp_path)
    assert main(["status", str(run.path)]) == 2
    assert "the sweep plan stored with study 'r' is not one this cpt-sweep wrote" in capsys.readouterr().err
    assert snapshot(tmp_path) == before


def test_a_study_database_that_is_not_sqlite_is_exit_2(tmp_path, capsys):
    run = RunDir(tmp_path / "r")
    run.path.mkdir()
    run.write_record(RunRecord(study_name="r", storage=None))
    run.study_db.write_bytes(b"this is not a database" * 100)
    assert main(["report", str(run.path)]) == 2
    assert f"{run.study_db} is not a SQLite database" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("[]", "is not a sweep summary cpt-sweep wrote"),
        (BEST.dumps_data({}), "is not a sweep summary cpt-sweep wrote"),
        ("{not json", "is not a sweep summary cpt-sweep wrote"),
    ],
)
def test_promote_of_a_corrupt_best_json_is_exit_2(content, fragment, tmp_path, capsys):
    run = RunDir(write_run(tmp_path / "runs" / "lr_mix"))
    run.best_json.write_text(content)
    before = snapshot(tmp_path)
    assert main(["promote", "plan", str(run.path), "--target", "llama3.1-8b"]) == 2
    error = capsys.readouterr().err
    assert str(run.best_json) in error and fragment in error
    assert snapshot(tmp_path) == before


def test_promote_of_a_corrupt_trial_config_is_exit_2(tmp_path, capsys):
    run = RunDir(write_run(tmp_path / "runs" / "lr_mix"))
    run.trial_config(7).write_text(TRIAL_CONFIG.dumps_data({"lr_fraction": "high"}))
    assert main(["promote", "plan", str(run.path), "--target", "llama3.1-8b"]) == 2
    assert f"{run.trial_config(7)} is not a trial config cpt-sweep wrote" in capsys.readouterr().err


def test_a_corrupt_plan_is_a_corrupt_file_naming_it(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(PLAN.dumps_data({"id": 1}))
    with pytest.raises(CorruptFile, match="plan.json is not a promotion plan cpt-sweep wrote"):
        Plan.read(path)


@pytest.mark.timeout(30)
def test_a_fifo_in_place_of_a_run_record_is_refused_without_blocking(tmp_path, capsys):
    run = RunDir(tmp_path / "r")
    run.path.mkdir()
    os.mkfifo(run.run_json)
    assert main(["status", str(run.path)]) == 2
    assert "not a regular file" in capsys.readouterr().err


OTHER_VERSIONS = {
    "no version": lambda data: {key: value for key, value in data.items() if key != FORMAT_KEY},
    "a future version": lambda data: data | {FORMAT_KEY: 99},
    "a version that is not an integer": lambda data: data | {FORMAT_KEY: "1"},
}


@pytest.mark.parametrize("change", OTHER_VERSIONS.values(), ids=list(OTHER_VERSIONS))
@pytest.mark.parametrize(
    ("name", "fmt", "argv"),
    [
        ("run.json", RUN_RECORD, ["status", "{run}"]),
        ("best.json", BEST, ["promote", "plan", "{run}", "--target", "llama3.1-8b"]),
        ("trials/0007/trial_config.json", TRIAL_CONFIG, ["promote", "plan", "{run}", "--target", "llama3.1-8b"]),
    ],
    ids=["run.json", "best.json", "trial_config.json"],
)
def test_a_file_of_another_format_version_is_exit_2_naming_it_and_left_as_it_was(
    name, fmt, argv, change, tmp_path, capsys
):
    run = RunDir(write_run(tmp_path / "runs" / "lr_mix"))
    run.write_record(RunRecord(study_name="lr_mix"))
    path = run.path / name
    path.write_text(json.dumps(change(json.loads(path.read_text())), indent=2))
    before, content = snapshot(tmp_path), path.read_bytes()
    assert main([part.format(run=run.path) for part in argv]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {path}: ") and f"reads {fmt.what} format {fmt.version} only: {fmt.remedy}" in line
    assert snapshot(tmp_path) == before and path.read_bytes() == content


def test_a_corrupt_base_loss_a_trial_stored_is_exit_2_naming_the_study_file_trial_and_key(tmp_path, capsys):
    """The report's curves start at each trial's stored base: a base loss of -1 there is refused, not drawn."""
    run = RunDir(tmp_path / "runs" / "r")
    run.path.mkdir(parents=True)
    record = RunRecord(study_name="r", storage=None)
    run.write_record(record)
    sweep = open_study(spec_with(sampler="random").plan(), url=record.url(run), name="r")
    number = sweep.ask().number

    def overwritten(report):
        sweep.trial(number).set_user_attr(Attr.BASE_LOSSES.value, TRIAL_BASE.stamped({"domain_loss": -1.0}))
        return scripted([0.1] * len(STEPS))(report)

    run_study_trial(sweep, number, overwritten, base=BASE)
    before = snapshot(tmp_path)
    assert main(["report", str(run.path)]) == 2
    error = capsys.readouterr().err
    assert str(run.study_db) in error and "trial 0's user attr 'base_losses'" in error
    assert "domain_loss: Input should be greater than 0 (got -1.0)" in error and len(error.strip().splitlines()) == 1
    assert snapshot(tmp_path) == before
