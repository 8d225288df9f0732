"""Where a trial's forgetting will end, predicted from where the completed trials' forgetting ended.

Every trial's general loss peaks mid-course and falls as the LR decays, so forgetting measured
mid-course overstates where a trial ends (on the default spec the eventual optimum stood at
0.0216 at step 100 and ended at 0.0171). Pruning judges a trial by the end its forgetting
predicts: a least-squares line final_forgetting ~ a + b x forgetting_at_step over the completed
trials that were evaluated at the same step. With fewer than MIN_TRIALS of them, or no rising
relation to fit, the raw value stands, and the forecast says why.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from optuna.trial import FrozenTrial

from sweep.study.record import history_of
from train_entry.config import StrictConfig

MIN_TRIALS = 3
"""Completed trials a line needs: two always fit exactly, and would pass any noise on as the trend."""


class ForgettingForecast(StrictConfig):
    """The forgetting a trial is predicted to end at, judged at one evaluation; stored with it."""

    step: int
    now: float
    """Forgetting measured at `step`."""
    predicted: float
    """What pruning judges: the fitted end, or `now` when there is no fit (`raw_because` says why)."""
    trials: int
    """Completed trials with an evaluation at `step`: the calibration."""
    intercept: float | None = None
    slope: float | None = None
    raw_because: str | None = None

    def describe(self) -> str:
        """How a pruning reason states it: "forgetting 0.0216 now, predicted 0.0171 at the end (...)"."""
        if self.raw_because is not None:
            return f"forgetting {self.now:.4f} now, not predicted ({self.raw_because})"
        return (
            f"forgetting {self.now:.4f} now, predicted {self.predicted:.4f} at the end "
            f"(fit over {self.trials} completed trials at step {self.step})"
        )


def forecast_forgetting(completed: Iterable[FrozenTrial], *, step: int, now: float) -> ForgettingForecast:
    """The end predicted for forgetting `now` at `step`, calibrated on the `completed` trials' curves."""
    pairs = calibration_pairs(completed, step)
    raw = {"step": step, "now": now, "predicted": now, "trials": len(pairs)}
    if len(pairs) < MIN_TRIALS:
        return ForgettingForecast(
            **raw, raw_because=f"{len(pairs)} completed trials evaluated at step {step}, {MIN_TRIALS} needed"
        )
    fit = _line(pairs)
    if fit is None:
        # A line that falls (or is flat) would let the worst trials look best: no trend to trust.
        return ForgettingForecast(**raw, raw_because=f"no rising trend over the {len(pairs)} completed trials")
    intercept, slope = fit
    return ForgettingForecast(**{**raw, "predicted": intercept + slope * now}, intercept=intercept, slope=slope)


def calibration_pairs(completed: Iterable[FrozenTrial], step: int) -> list[tuple[float, float]]:
    """(forgetting at `step`, final forgetting) of each trial evaluated at `step`, finite values only."""
    pairs = []
    for frozen in completed:
        history = history_of(frozen) or []
        at_step = [metrics.forgetting for metrics in history if metrics.step == step]
        if at_step and math.isfinite(at_step[0]) and math.isfinite(history[-1].forgetting):
            pairs.append((at_step[0], history[-1].forgetting))
    return pairs


def _line(pairs: list[tuple[float, float]]) -> tuple[float, float] | None:
    """(intercept, slope) of the least-squares line through the pairs; None unless the slope is positive."""
    n = len(pairs)
    mean_x = sum(x for x, _ in pairs) / n
    mean_y = sum(y for _, y in pairs) / n
    spread = sum((x - mean_x) ** 2 for x, _ in pairs)
    if spread < 1e-12:  # every trial stood at the same forgetting: nothing to draw a line through
        return None
    slope = sum((x - mean_x) * (y - mean_y) for x, y in pairs) / spread
    return (mean_y - slope * mean_x, slope) if slope > 0 else None
