"""The predicted forgetting trajectory: the proxy's measured curve scaled to the full run's tokens and moved to end at
the promoted point's prediction, its upper bound carried by the point's interval; none without an interval."""

from __future__ import annotations

import pytest

from sweep.choice.pick import PickSource
from sweep.files.compat import TRIAL_RESULT
from sweep.files.rundir import RunDir
from sweep.promote.plan.prediction import ONE_SIDED_90, predicted_trajectory
from sweep.promote.point.point import PromotedPoint
from tests.sweep.scripted import figures_of
from train_entry.mix import MixRatio
from train_entry.text_losses import TextError
from train_entry.trial_config import Metrics, TrialResult, TrialStatus

TOKENS = 10**12


def point(**update) -> PromotedPoint:
    fields = dict(
        source=PickSource.SURROGATE, trial=3, lr_fraction=0.5, mix=MixRatio.parse("1:1"), domain_gain=0.2,
        forgetting=0.02, forgetting_interval=(0.01, 0.035), reason="test",
    )  # fmt: skip
    return PromotedPoint(**{**fields, **update})


def write_result(run: RunDir, forgettings: list[float], text_error: float | None = None) -> None:
    history = [
        Metrics(step=i, tokens_seen=1000 * i, domain_loss=2, general_loss=2, domain_gain=0.1, forgetting=f,
                train_loss=2, lr=1e-4)
        for i, f in enumerate(forgettings, start=1)
    ]  # fmt: skip
    figures = figures_of(history[-1]).model_copy(
        update={"text_error": None if text_error is None else TextError(domain_gain=0.001, forgetting=text_error)}
    )
    result = TrialResult(
        status=TrialStatus.COMPLETED, steps=len(history), tokens_seen=1000 * len(history), wall_seconds=1.0,
        history=history, figures=figures,
    )  # fmt: skip
    run.trial_result(3).parent.mkdir(parents=True)
    run.trial_result(3).write_text(TRIAL_RESULT.dumps(result))


def test_the_proxy_curve_is_scaled_to_the_full_runs_tokens_and_ends_at_the_points_prediction(tmp_path):
    run = RunDir(tmp_path)
    write_result(run, [0.004, 0.010, 0.016, 0.018])
    trajectory = predicted_trajectory(run, point(), TOKENS)
    assert [p.tokens for p in trajectory.points] == [0, 0.25 * TOKENS, 0.5 * TOKENS, 0.75 * TOKENS, TOKENS]
    assert [p.forgetting for p in trajectory.points] == pytest.approx([0, 0.006, 0.012, 0.018, 0.02])
    assert all(p.forgetting_upper - p.forgetting == pytest.approx(0.015) for p in trajectory.points)
    assert "an extrapolation" in trajectory.source and trajectory.level == 0.9


def test_without_the_surrogates_interval_the_trials_text_error_bounds_it(tmp_path):
    run = RunDir(tmp_path)
    write_result(run, [0.01, 0.02], text_error=0.004)
    trajectory = predicted_trajectory(run, point(forgetting_interval=None), TOKENS)
    assert trajectory.points[-1].forgetting_upper == pytest.approx(0.02 + ONE_SIDED_90 * 0.004)


def test_no_interval_at_all_is_no_prediction(tmp_path):
    run = RunDir(tmp_path)
    write_result(run, [0.01, 0.02])
    assert predicted_trajectory(run, point(forgetting_interval=None), TOKENS) is None


def test_a_point_without_a_trial_goes_straight_from_the_base_to_its_prediction(tmp_path):
    trajectory = predicted_trajectory(RunDir(tmp_path), point(trial=None), TOKENS)
    assert [(p.tokens, p.forgetting) for p in trajectory.points] == [(0, 0), (TOKENS, 0.02)]
