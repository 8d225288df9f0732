"""The end of a sweep on scripted trials: it has finished when every trial it will run has, as things stand."""

from __future__ import annotations

from scripted import BASE, STEPS, scripted

from sweep.choice.confirmation import Outcome
from sweep.files.rundir import RunDir
from sweep.run.driver import finish_sweep
from sweep.study.trial import run_study_trial


def test_a_sweep_with_no_feasible_trial_and_nothing_to_confirm_has_finished(open_sweep, tmp_path):
    # It used to plan 2 confirmation trials it could never run, exit 1 asking to run it again, and do so every time.
    sweep = open_sweep(num_trials=4, confirmation={"seeds": 2, "candidates": 2}, pruner={"type": "none"})
    for _ in range(4):
        trial = sweep.ask()
        run_study_trial(sweep, trial.number, scripted([0.2] * len(STEPS), forgetting=0.1), base=BASE)  # 5 x the budget
    run = RunDir(tmp_path / "runs" / "test")
    run.path.mkdir(parents=True)

    outcome = finish_sweep(sweep, run, wandb=None)

    assert outcome.summary.confirmation.outcome is Outcome.NOT_FOUND and not outcome.summary.confirmation.rounds
    assert outcome.finished == outcome.planned == 4
    assert outcome.summary.verdict.startswith("no pick: ")


def test_the_study_names_the_pick_for_optuna_dashboard_and_best_trial_is_the_best_observed_trial(open_sweep, tmp_path):
    sweep = open_sweep(num_trials=5, pruner={"type": "none"}, sampler="random")
    for k in range(5):
        trial = sweep.ask()  # gain and forgetting rise together: the last one is over the 0.02 budget
        run_study_trial(sweep, trial.number, scripted([0.1 + 0.02 * k] * len(STEPS), forgetting=0.006 * k), base=BASE)
    run = RunDir(tmp_path / "runs" / "test")
    run.path.mkdir(parents=True)

    summary = finish_sweep(sweep, run, wandb=None).summary

    attr = sweep.study.user_attrs["pick"]
    assert attr["verdict"] == summary.verdict and attr["trials"] == summary.pick_trials
    assert attr["lr_fraction"] == summary.pick.point.lr_fraction and attr["mix"] == summary.pick.point.mix
    # Optuna's own best_trial reads the stored forgetting constraint: the best observed trial, not trial 4
    assert sweep.study.best_trial.number == summary.best_observed.number == 3
