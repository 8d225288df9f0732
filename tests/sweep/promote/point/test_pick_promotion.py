"""Promotion takes best.json's pick: the surrogate's point with its intervals and probability, or the
best observed trial's when the surrogate could not pick or on --observed; a pick not confirmed at fresh seeds
only on --unconfirmed."""

from __future__ import annotations

import json

import pytest
from scipy.special import ndtr

from cli import main
from sweep.choice.best import read_best, write_best
from sweep.choice.confirmation import Confirmation, Outcome
from sweep.choice.pick import Pick, PickSource
from sweep.choice.surrogate import Z90
from sweep.files.rundir import RunDir
from sweep.promote.errors import PromotionError
from sweep.promote.plan.plan import Plan, make_plan
from sweep.promote.plan.summary import summary_markdown
from sweep.promote.point.point import read_promoted
from sweep.promote.request.config import PromotionConfig
from tests.sweep.promote.promote_runs import MAX_LR, confirmed, surrogate_pick, write_run
from train_entry.mix import MixRatio, blend_weights

TARGET = PromotionConfig(target="llama3.1-70b")


def test_the_plan_promotes_the_surrogates_pick_with_its_intervals(tmp_path):
    run_dir = write_run(tmp_path / "lr_mix", pick=surrogate_pick(0.13, "1:2"))
    plan = make_plan(run_dir, TARGET)

    promoted = plan.sweep.promoted
    assert (promoted.source, promoted.trial, promoted.lr_fraction, str(promoted.mix)) == (
        PickSource.SURROGATE, None, 0.13, "1:2"
    )  # fmt: skip
    assert plan.run.optimization.lr == pytest.approx(0.13 * 1.5e-4)
    weights = {source.name: source.weight for source in plan.run.data.blend}
    assert weights == pytest.approx(blend_weights(MixRatio.parse("1:2"), 0.1))  # trial 7's non-English share
    assert (promoted.domain_gain, promoted.forgetting) == (0.23, 0.016)
    # P(forgetting <= 0.02) of a re-run: the surface's spread and a seed noise as large, both 0.0015.
    assert promoted.probability_within_budget == pytest.approx(float(ndtr((0.02 - 0.016) / (2**0.5 * 0.0015))))
    assert promoted.forgetting_interval == pytest.approx((0.016 - Z90 * 0.0015, 0.016 + Z90 * 0.0015))
    assert promoted.reason.startswith("12 of 205 candidate points")
    summary = summary_markdown(plan)
    assert "surrogate pick between tried points: predicted domain_gain 0.2300" in summary
    assert f"forgetting [0.0135, 0.0185]; P(proxy re-run within budget) {promoted.probability_within_budget:.2f}" in (
        summary
    )


def test_observed_takes_the_best_trial_instead(tmp_path):
    run_dir = write_run(tmp_path / "lr_mix", pick=surrogate_pick(0.13, "1:2"))
    plan = make_plan(run_dir, TARGET, observed=True)
    promoted = plan.sweep.promoted
    assert (promoted.source, promoted.trial, promoted.lr_fraction, str(promoted.mix)) == (
        PickSource.OBSERVED, 7, 0.1, "1:1"
    )  # fmt: skip
    assert (promoted.domain_gain, promoted.forgetting) == (0.21, 0.015)  # measured, not predicted
    assert promoted.reason == "the best observed trial, as asked (--observed)"
    assert plan.run.optimization.lr == pytest.approx(0.1 * 1.5e-4)
    assert plan.id != make_plan(run_dir, TARGET).id  # another point, another plan


def test_the_trial_config_is_moved_to_the_promoted_point(tmp_path):
    run_dir = write_run(tmp_path / "lr_mix", pick=surrogate_pick(0.13, "1:2"))
    _, trial = read_promoted(run_dir)
    assert (trial.lr_fraction, str(trial.mix), trial.non_english_share) == (0.13, "1:2", 0.1)
    assert trial.peak_lr == pytest.approx(0.13 * MAX_LR)  # what the rehearsal trains at


def test_a_best_json_without_a_pick_is_refused_with_exit_2_and_left_as_it_was(tmp_path, capsys):
    run_dir = write_run(tmp_path / "lr_mix")
    run = RunDir(run_dir)
    stored = json.loads(run.best_json.read_text())
    del stored["pick"]
    run.best_json.write_text(json.dumps(stored))
    before = run.best_json.read_bytes()
    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b"]) == 2
    err = capsys.readouterr().err
    assert str(run.best_json) in err and "pick" in err
    assert run.best_json.read_bytes() == before and not (run_dir / "promotion").exists()


def test_a_pick_of_nothing_is_refused_with_its_reason(tmp_path):
    run_dir = write_run(tmp_path / "lr_mix", feasible=False)
    reason = "no candidate point is within the budget with probability >= 0.9 (the highest is 0.41), and no ..."
    best = read_best(RunDir(run_dir))
    write_best(
        best.model_copy(update={"pick": Pick(source=None, point=None, reason=reason, rule="r", min_probability=0.9)}),
        RunDir(run_dir),
    )
    with pytest.raises(PromotionError, match=r"has no point to promote: no pick \(no candidate point"):
        make_plan(run_dir, TARGET)


def test_the_command_line_plans_the_pick_and_observed_plans_the_trial(tmp_path, capsys):
    run_dir = write_run(tmp_path / "lr_mix", pick=surrogate_pick(0.13, "1:2"))
    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b"]) == 0
    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b", "--observed"]) == 0
    out = capsys.readouterr().out
    assert "surrogate pick between tried points" in out and "best observed trial 7: measured" in out
    plans = [Plan.read(directory) for directory in sorted((run_dir / "promotion").iterdir())]
    assert sorted(plan.sweep.promoted.source.value for plan in plans) == ["observed", "surrogate"]


def test_a_pick_its_fresh_seeds_held_over_the_budget_is_refused_unless_asked_for(tmp_path, capsys):
    pick = surrogate_pick(0.13, "1:2")
    run_dir = write_run(tmp_path / "lr_mix", pick=pick, confirmation=confirmed(pick, forgetting=0.026))
    before = (run_dir / "best.json").read_bytes()
    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b"]) == 2
    err = capsys.readouterr().err
    assert "the pick (0.13 @ 1:2) is not confirmed at fresh seeds (not_found: round 0: forgetting 0.026)" in err
    assert "--unconfirmed" in err and not (run_dir / "promotion").exists()
    assert (run_dir / "best.json").read_bytes() == before
    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b", "--unconfirmed"]) == 0
    (plan,) = [Plan.read(directory) for directory in (run_dir / "promotion").iterdir()]
    assert plan.sweep.promoted.lr_fraction == 0.13 and "confirmation: round 0" in plan.sweep.promoted.reason


def test_a_pick_never_confirmed_is_refused_naming_the_setting_that_turned_it_off(tmp_path):
    pick = surrogate_pick(0.13, "1:2")
    off = Confirmation(outcome=Outcome.OFF, reason="search.confirmation.seeds is 0")
    run_dir = write_run(tmp_path / "lr_mix", pick=pick, confirmation=off)
    with pytest.raises(PromotionError, match=r"not confirmed at fresh seeds \(off: search.confirmation.seeds is 0\)"):
        make_plan(run_dir, TARGET)
    assert make_plan(run_dir, TARGET, unconfirmed=True).sweep.promoted.lr_fraction == 0.13
