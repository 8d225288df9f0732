"""Promotion of a ladder: the loss law's optimum at the target's N and the request's tokens, every figure the plan
shows evaluated at the point it promotes, and the law, its intervals and its fold errors recorded in the plan; a law
that refuses is exit 2 with its message unless --observed, which takes the largest rung's own pick."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli import main
from cli.law import target_scale
from sweep.choice.pick import PickSource
from sweep.files.rundir import RunDir
from sweep.ladder.record import read_ladder
from sweep.law.optimum import at
from sweep.promote.plan.plan import Plan, make_plan
from sweep.promote.plan.summary import summary_markdown
from sweep.promote.point.point import read_promoted
from sweep.promote.request.config import PromotionConfig
from sweep.target.schedule import lr_mean
from tests.sweep.promote.promote_runs import surrogate_pick, write_run
from train_entry.mix import blend_weights
from train_entry.optimizer import OptimizerConfig

TARGET = PromotionConfig(target="llama3.1-70b")


@pytest.fixture
def ladder(scripted_ladder_run, tmp_path) -> Path:
    """A copy of the scripted ladder whose largest rung has a pick and a resolved trial config, as a trained one."""
    run = tmp_path / "runs" / "ladder"
    shutil.copytree(scripted_ladder_run, run)
    # In the rung's searched space, within its forgetting budget of 0.01 with its rule's probability.
    write_run(RunDir(run).rung("m").path, pick=surrogate_pick(0.14, "1:3", forgetting=0.006, budget=0.01))
    return run


def test_the_plan_takes_the_laws_optimum_with_every_figure_at_the_promoted_point(ladder):
    plan = make_plan(ladder, TARGET)
    promoted, summary = plan.sweep.promoted, read_ladder(RunDir(ladder))
    prediction = summary.fit.prediction  # made for the same target and tokens: taken as it is
    point, intervals = prediction.optimum, prediction.intervals
    assert promoted.source is PickSource.LADDER and promoted.trial is None
    assert (promoted.lr_fraction, str(promoted.mix)) == (point.lr_fraction, point.mix)
    here = at(promoted.ladder.laws.stacked(), promoted.ladder.target, promoted.lr_fraction, promoted.mix.domain_share)
    assert (promoted.domain_gain, promoted.forgetting) == (here.domain_gain, here.forgetting)
    assert promoted.gain_interval == (intervals.domain_gain.low, intervals.domain_gain.high)
    assert promoted.forgetting_interval == (intervals.forgetting.low, intervals.forgetting.high)
    assert promoted.probability_within_budget == prediction.within_budget
    assert promoted.ladder.laws == summary.fit.laws and promoted.ladder.prediction == prediction
    assert promoted.probability_within_budget >= summary.pick.min_probability == 0.9
    carried = prediction.discrepancy  # the form's error the P and the intervals carry, as the record has it
    assert f"each with its draw of the form's error (sd {carried.forgetting:.2g} of forgetting and" in promoted.reason
    assert [fold.rung for fold in promoted.ladder.folds] == ["xxs", "xs", "s", "m"]
    weights = {source.name: source.weight for source in plan.run.data.blend}
    assert weights == pytest.approx(blend_weights(promoted.mix, 0.1))
    assert plan.run.optimization.lr == pytest.approx(promoted.lr_fraction * 1.5e-4, rel=1e-5)
    assert Plan.model_validate_json(plan.model_dump_json()) == plan
    assert make_plan(ladder, TARGET).id == plan.id  # seeded refits: the same request hashes to the same plan
    text = summary_markdown(plan)
    assert "the ladder's loss law at the target's size: predicted" in text and "share of refits within" in text
    # The evidence: the fraction carried to the target by the law, with its interval there; none of it the proxy's.
    carried, lr = plan.sweep.carried, intervals.lr_fraction
    assert (carried.by, carried.lr_fraction_interval) == ("law", (lr.low, lr.high))
    assert plan.sweep.proxy.max_lr == 3e-3  # the largest rung's trial's base
    flat = " ".join(text.replace("│", " ").split())
    assert (
        f"{promoted.lr_fraction:.4g}, carried to llama3.1-70b's {carried.target_parameters / 1e9:.2f} B non-embedding "
        f"parameters by the ladder's loss law: 90 % interval [{lr.low:.4g}, {lr.high:.4g}]"
    ) in flat
    assert "certainty the law's at llama3.1-70b's size, not a proxy's: 90 % intervals" in flat
    assert "proxy base the largest rung's base " in flat
    assert "- warning: predicted 5.0 orders of magnitude beyond the largest rung" in text
    assert "- warning: matched only in part: pretrain_tokens_per_parameter" in text


def test_the_plan_predicts_at_the_target_its_ladder_was_matched_to_and_writes_the_schedule_the_law_read(ladder):
    """sweep promote of a ladder, the ladder itself (ladder.json's at_target, as `sweep run` matched it) and sweep law
    fit with the proxy's schedule as its flags give one target; the plan's Megatron schedule is the one whose mean LR
    the law read there."""
    plan = make_plan(ladder, TARGET)
    matched = read_ladder(RunDir(ladder)).at_target
    _, trial = read_promoted(RunDir(ladder).rung("m").path, unconfirmed=True)
    fitted = target_scale("llama3.1-70b", tokens=TARGET.tokens, lr_mean=None, recipe=trial.proxy)
    assert plan.sweep.promoted.ladder.target == matched.scale == fitted
    opt = plan.run.optimization
    assert (opt.train_iters, opt.warmup_iters) == (matched.steps, matched.warmup_steps)
    floor = opt.min_lr / opt.lr
    assert (opt.decay_style, floor) == (trial.proxy.schedule, pytest.approx(trial.proxy.min_lr_ratio))
    written = OptimizerConfig(warmup_steps=opt.warmup_iters, schedule=opt.decay_style, min_lr_ratio=floor)
    assert lr_mean(written, steps=opt.train_iters, total_steps=opt.train_iters) == pytest.approx(fitted.lr_mean)


def test_the_predicted_trajectory_is_the_law_at_each_token_count_along_the_run(ladder):
    """Not a straight line from the base to the end: the law itself at 40 token counts, each at the LR area the run's
    schedule has reached there, with the law's interval there, ending at the promoted point's own figures."""
    plan = make_plan(ladder, TARGET)
    promoted, prediction = plan.sweep.promoted, plan.prediction
    law, opt = promoted.ladder, plan.run.optimization
    assert (
        "the ladder's loss law" in prediction.source
        and "an extrapolation from rungs xxs, xs, s, m" in prediction.source
    )
    assert len(prediction.points) == 1 + 40 and prediction.points[0].tokens == 0 and prediction.level == 0.9
    end = prediction.points[-1]
    assert (end.tokens, end.forgetting, end.forgetting_upper) == (
        plan.tokens,
        promoted.forgetting,
        promoted.forgetting_interval[1],
    )
    # The point after a quarter of the run's steps, evaluated here from the law and the plan's own schedule.
    steps = opt.train_iters
    quarter = round(steps / 4)
    schedule = OptimizerConfig(
        warmup_steps=opt.warmup_iters, schedule=opt.decay_style, min_lr_ratio=opt.min_lr / opt.lr
    )
    there = law.target.model_copy(
        update={"tokens": plan.tokens * quarter / steps, "lr_mean": lr_mean(schedule, steps=quarter, total_steps=steps)}
    )
    expected = at(law.laws.stacked(), there, promoted.lr_fraction, promoted.mix.domain_share).forgetting
    (point,) = [p for p in prediction.points if p.tokens == pytest.approx(there.tokens)]
    assert point.forgetting == pytest.approx(expected, rel=1e-3)
    assert point.forgetting_upper > point.forgetting
    straight = end.forgetting * point.tokens / end.tokens
    assert abs(point.forgetting - straight) > 0.05 * end.forgetting
    assert "│ watch       │ forgetting held to: the ladder's loss law at the target's size" in summary_markdown(plan)


def test_another_token_count_refits_the_law_there(ladder):
    """0.45 T tokens where the ladder was matched to 1 T: the law is evaluated at the request's own tokens (a law of
    the LR area alone has its mean-constrained optimum at 2.2 x the lr_fraction), and the rungs' share of their
    pretraining now differs from the full run's by more than 2x."""
    promoted = make_plan(ladder, TARGET.model_copy(update={"tokens": 45 * 10**10})).sweep.promoted
    stored = read_ladder(RunDir(ladder)).fit.prediction
    prediction = promoted.ladder.prediction
    assert promoted.ladder.target.tokens == 4.5e11 and prediction.target.tokens == 4.5e11
    area_forms = sum(fit.weight for fit in promoted.ladder.laws.credible if fit.form.endswith("-area"))
    assert area_forms == pytest.approx(sum(fit.weight for fit in promoted.ladder.laws.credible))
    assert prediction.mean_optimum.lr_fraction / stored.mean_optimum.lr_fraction == pytest.approx(1 / 0.45, rel=0.05)
    assert (promoted.lr_fraction, str(promoted.mix)) == (prediction.optimum.lr_fraction, prediction.optimum.mix)
    assert promoted.ladder.prediction != stored and promoted.ladder.prediction.refits == stored.refits
    assert any("matched only in part: cpt_share" in w and "0.03 at the target" in w for w in promoted.warnings)


def test_a_law_that_refuses_is_exit_2_with_its_message_unless_observed(ladder, capsys):
    """A searched box ending at lr_fraction 0.1, below the law's optimum: the law says which way to extend the space,
    and nothing is promoted from it; --observed promotes the largest rung's own pick."""
    run = RunDir(ladder)
    raw = json.loads(run.ladder_json.read_text())
    raw["space"]["lr_fraction"] = [0.05, 0.1]
    run.ladder_json.write_text(json.dumps(raw))
    argv = ["promote", "plan", str(ladder), "--target", "llama3.1-70b", "--tokens", str(2 * 10**11)]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "extend the space toward higher lr_fraction (above 0.1)" in error and "--observed" in error
    assert len(error.strip().splitlines()) == 1 and not (ladder / "promotion").exists()
    assert main([*argv, "--observed"]) == 0
    (plan_dir,) = (ladder / "promotion").iterdir()
    promoted = Plan.read(plan_dir).sweep.promoted
    assert (promoted.source, promoted.lr_fraction, str(promoted.mix)) == (PickSource.SURROGATE, 0.14, "1:3")
    assert promoted.reason.startswith("the largest rung m's pick, as asked (--observed)")


def test_a_point_below_the_picks_probability_is_exit_2_with_the_figures_unless_observed(ladder, capsys):
    """A ladder.json whose law's point keeps the budget in 52 % of its refits (the mean-constrained optimum's share,
    as an earlier rule promoted it): refused with both figures, and --observed promotes the largest rung's pick."""
    run = RunDir(ladder)
    raw = json.loads(run.ladder_json.read_text())
    raw["fit"]["prediction"]["within_budget"] = 0.52
    run.ladder_json.write_text(json.dumps(raw))
    point = read_ladder(run).fit.prediction.optimum
    argv = ["promote", "plan", str(ladder), "--target", "llama3.1-70b"]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert (
        f"P(forgetting <= budget) at the law's point (lr_fraction {point.lr_fraction:.4g}, mix {point.mix}) is "
        "0.52, below objective.pick.min_probability 0.9" in error
    )
    assert "--observed" in error and not (ladder / "promotion").exists()
    assert main([*argv, "--observed"]) == 0


def test_an_unfinished_ladder_is_exit_2(ladder, capsys):
    run = RunDir(ladder)
    raw = json.loads(run.ladder_json.read_text())
    run.ladder_json.write_text(json.dumps(raw | {"finished": raw["finished"][:2], "fit": None}))
    assert main(["promote", "plan", str(ladder), "--target", "llama3.1-70b"]) == 2
    assert "is an unfinished ladder: rungs ['xxs', 'xs'] of ['xxs', 'xs', 's', 'm']" in capsys.readouterr().err
