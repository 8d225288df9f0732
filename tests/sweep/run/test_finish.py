"""The end of a sweep on scripted trials: it has finished when every trial it will run has, as things stand."""

from __future__ import annotations

from scripted import STEPS, scripted

from sweep.choice.confirmation import Outcome
from sweep.files.rundir import RunDir
from sweep.run.driver import finish_sweep
from sweep.study.trial import run_study_trial


def test_a_sweep_with_no_feasible_trial_and_nothing_to_confirm_has_finished(open_sweep, tmp_path):
    # It used to plan 2 confirmation trials it could never run, exit 1 asking to run it again, and do so every time.
    sweep = open_sweep(num_trials=4, confirmation={"seeds": 2, "candidates": 2}, pruner={"type": "none"})
    for _ in range(4):
        trial = sweep.ask()
        run_study_trial(sweep, trial.number, scripted([0.2] * len(STEPS), forgetting=0.1))  # 5 x the budget
    run = RunDir(tmp_path / "runs" / "test")
    run.path.mkdir(parents=True)

    outcome = finish_sweep(sweep, run, wandb=None)

    assert outcome.summary.confirmation.outcome is Outcome.NOT_FOUND and not outcome.summary.confirmation.rounds
    assert outcome.finished == outcome.planned == 4
    assert outcome.summary.verdict.startswith("no pick: ")
