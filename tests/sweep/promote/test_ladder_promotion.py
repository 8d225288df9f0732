"""Promotion of a ladder: the lines at the target's N (the plan records the source, the intervals and a warning
when the forgetting interval crosses the budget), or with --observed the largest rung's pick."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from promote_runs import SPACE, surrogate_pick, write_run

from cli import main
from sweep.choice.pick import PickSource
from sweep.files.rundir import RunDir
from sweep.ladder.fit import Quantity
from sweep.ladder.record import LadderSummary, RungResult, fit_rungs, write_ladder
from sweep.promote.config import PromotionConfig
from sweep.promote.plan import make_plan
from sweep.promote.summary import summary_markdown
from sweep.promote.targets import PRESETS
from sweep.scale import non_embedding_params
from sweep.spec.space import SearchSpace
from train_entry.mix import blend_weights

TARGET = PromotionConfig(target="llama3.1-70b")
SIZES = {"xs": 92_480, "s": 302_496, "m": 738_432}


WIDE = SearchSpace.model_validate({"lr_fraction": {"low": 0.01, "high": 0.3}, "mix": ["4:1", "1:1", "1:4"]})
"""A space the scripted lines stay inside at 70B (lr_fraction 0.017, mix about 1:3.7)."""


def write_ladder_run(
    root: Path, *, forgetting_scatter: float = 0.0, budget: float = 0.02, space: SearchSpace = WIDE
) -> Path:
    """runs/ladder/ with ladder.json over three rungs whose picks follow a known line (with scatter in
    forgetting), and the largest rung's run directory as a finished sweep."""
    run = RunDir(root / "runs" / "ladder")
    rungs = [
        RungResult(
            name=name, parameters=n, trial_tokens=int(0.277 * n), pick_source=PickSource.SURROGATE,
            lr_fraction=0.25 * (n / 1e5) ** -0.2, mix="2:1",
            values={
                Quantity.LOG_LR_FRACTION: math.log(0.25 * (n / 1e5) ** -0.2),
                Quantity.LOG_MIX_RATIO: math.log(4.0) - 0.2 * math.log(n / 1e5) + 0.01 * k,
                Quantity.GAIN: 0.2 + 0.01 * math.log(n / 1e5),
                Quantity.FORGETTING: 0.01 + (forgetting_scatter if k == 1 else 0.0),
            },
        )
        for k, (name, n) in enumerate(SIZES.items())
    ]  # fmt: skip
    summary = LadderSummary(
        target="llama3.1-70b", forgetting_budget=budget, reference_lr_fraction=0.1, reference_mix="2:1",
        trial_tokens_per_parameter=0.277, pretrain_tokens_per_parameter=3.33, planned=list(SIZES), rungs=rungs,
        space=space,
        fits=fit_rungs(rungs), prediction=None, prediction_note="scripted",
    )  # fmt: skip
    run.path.mkdir(parents=True)
    write_ladder(run, summary)
    write_run(run.rung("m").path, pick=surrogate_pick(0.13, "1:2"))
    return run.path


def test_the_plan_takes_the_lines_at_the_targets_size(tmp_path):
    plan = make_plan(write_ladder_run(tmp_path), TARGET)
    optimum = plan.sweep.promoted
    n = non_embedding_params(PRESETS["llama3.1-70b"].model)
    assert optimum.source is PickSource.LADDER and optimum.ladder.parameters == n and optimum.trial is None
    assert optimum.lr_fraction == pytest.approx(0.25 * (n / 1e5) ** -0.2, rel=1e-3)
    assert optimum.ladder.dof == 1 and optimum.ladder.lr_fraction_interval is not None
    # The mix is continuous: the blend follows the extrapolated ratio itself.
    weights = {source.name: source.weight for source in plan.run.data.blend}
    assert weights == pytest.approx(blend_weights(optimum.mix, 0.1))
    assert plan.run.optimization.lr == pytest.approx(optimum.lr_fraction * 1.5e-4, rel=1e-5)
    assert not any("crosses the forgetting budget" in warning for warning in optimum.warnings)
    assert "ladder extrapolation to the target's size" in summary_markdown(plan)


def test_a_point_the_lines_put_outside_the_searched_space_is_clipped_into_it_with_a_warning(tmp_path):
    optimum = make_plan(write_ladder_run(tmp_path, space=SPACE), TARGET).sweep.promoted  # lr_fraction 0.05-0.2
    assert optimum.lr_fraction == 0.05 and optimum.ladder.lr_fraction == 0.05
    (warning,) = [w for w in optimum.warnings if "lr_fraction at the target" in w]
    assert "0.01702, lies outside the searched 0.05-0.2: clipped to 0.05" in warning
    assert not any("mix at the target" in w for w in optimum.warnings)  # about 1:3.7, inside 2:1 to 1:4


def test_a_forgetting_interval_over_the_budget_is_a_warning_in_the_plan_and_its_summary(tmp_path):
    plan = make_plan(write_ladder_run(tmp_path, forgetting_scatter=0.004, budget=0.012), TARGET)
    warnings = plan.sweep.promoted.warnings
    assert any("crosses the forgetting budget 0.012" in warning for warning in warnings)
    summary = summary_markdown(plan)
    assert "- warning: the extrapolated forgetting's 90 % interval" in summary and "WARNING" in summary


def test_observed_takes_the_largest_rungs_pick(tmp_path):
    plan = make_plan(write_ladder_run(tmp_path), TARGET, observed=True)
    optimum = plan.sweep.promoted
    assert (optimum.source, optimum.lr_fraction, str(optimum.mix)) == (PickSource.SURROGATE, 0.13, "1:2")
    assert optimum.reason.startswith("the largest rung m's pick, as asked (--observed)")


def test_an_unfinished_ladder_is_exit_2(tmp_path, capsys):
    run_dir = write_ladder_run(tmp_path)
    run = RunDir(run_dir)
    from sweep.ladder.record import read_ladder

    summary = read_ladder(run)
    write_ladder(run, summary.model_copy(update={"rungs": summary.rungs[:2]}))
    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-70b"]) == 2
    assert "is an unfinished ladder: rungs ['xs', 's'] of ['xs', 's', 'm']" in capsys.readouterr().err
