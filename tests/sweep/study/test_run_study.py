"""A run's study opened once by a reader that checks several files against it (sweep/study/run_study.py)."""

from __future__ import annotations

import pytest

from sweep.files.rundir import NotARunDirectory, RunDir
from sweep.promote.point.point import read_promoted
from sweep.study import run_study
from tests.sweep.promote.promote_runs import write_run


@pytest.fixture
def counted_opens(monkeypatch) -> list[RunDir]:
    """The runs open_run is called on from now on."""
    opens, real = [], run_study.open_run
    monkeypatch.setattr(run_study, "open_run", lambda run: opens.append(run) or real(run))
    return opens


def test_the_study_is_opened_at_the_first_call_only(tmp_path, counted_opens):
    run = RunDir(write_run(tmp_path / "runs" / "lr_mix"))
    study = run_study.opened_once(run)
    assert counted_opens == []
    first = study()
    assert study() is first and counted_opens == [run]


def test_a_study_that_cannot_be_opened_is_refused_at_every_call(tmp_path):
    run = RunDir(write_run(tmp_path / "runs" / "lr_mix"))
    run.study_db.write_bytes(b"")
    study = run_study.opened_once(run)
    for _ in range(2):
        with pytest.raises(NotARunDirectory, match="is an empty file, not a SQLite database"):
            study()


def test_a_promotion_reads_the_study_once_for_its_pick_its_observed_trial_and_its_trial_config(tmp_path, counted_opens):
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    point, _ = read_promoted(run_dir)
    assert point.source.value == "observed"  # checked as the pick, then as the best observed trial
    assert counted_opens == [RunDir(run_dir)]
