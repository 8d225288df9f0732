"""The predicted trajectory of forgetting the full run is watched against (train_entry/fullrun/watch.py).

A ladder's law gives it whole: the law's forgetting at the promoted point at token counts along the run (the LR area
the run's schedule has reached at each), each with the law's 90 % interval there (sweep/promote/point/ladder.py), an
extrapolation beyond the largest rung stated as one. Otherwise its end is the promoted point's own prediction: the
surrogate's mean at its pick, or the trial's measurement at the best observed trial, with the 90 % interval that
came with it (else the trial's own validation-text standard error, x 1.645 for one-sided 90 %), and its shape in
between is the promoted point's proxy trial's measured curve, its tokens scaled from the proxy's to the full run's
and moved to end at that prediction: an extrapolation of a run some 10^4 times shorter, stated as one. No interval at all,
or no end value, gives no prediction: the watch then says "no credible prediction" instead of inventing a bound.
"""

from __future__ import annotations

from sweep.files.compat import TRIAL_RESULT
from sweep.files.records import CorruptFile, read_model
from sweep.files.rundir import RunDir
from sweep.promote.errors import PromotionError
from sweep.promote.point.ladder import LawPoint
from sweep.promote.point.point import PromotedPoint
from train_entry.fullrun.watch import PredictedPoint, PredictedTrajectory
from train_entry.trial_config import TrialResult

LEVEL = 0.9
ONE_SIDED_90 = 1.6448536269514722
"""The standard normal's 0.95 quantile: an upper bound a measurement exceeds 5 % of the time, as the 90 % interval's
upper end is."""


def predicted_trajectory(run: RunDir, point: PromotedPoint, tokens: int) -> PredictedTrajectory | None:
    """Forgetting against the full run's tokens with its upper bound; None without an interval to bound it by."""
    if point.ladder is not None and point.ladder.trajectory:
        return _law_trajectory(point.ladder)
    result = _trial_result(run, point.trial)
    upper = _upper_at_end(point, result)
    if upper is None:
        return None
    margin = upper - point.forgetting
    curve = [(0.0, 0.0)]  # the base, by definition
    if result is not None and result.history and result.tokens_seen > 0:
        final = result.history[-1].forgetting
        # The proxy's measured shape, shifted to end at the point's prediction.
        curve += [
            (m.tokens_seen / result.tokens_seen, m.forgetting - final + point.forgetting)
            for m in result.history
            if 0 < m.tokens_seen <= result.tokens_seen
        ]
    if curve[-1][0] < 1.0:
        curve.append((1.0, point.forgetting))
    where = "the ladder's loss law" if point.ladder is not None else "the proxies"
    return PredictedTrajectory(
        source=(
            f"{where}: forgetting {point.forgetting:.4f} at the end, upper bound {upper:.4f} ({LEVEL:.0%}); the "
            "promoted point's proxy curve scaled from the proxy's tokens to the full run's (an extrapolation)"
        ),
        level=LEVEL,
        points=[
            PredictedPoint(tokens=fraction * tokens, forgetting=value, forgetting_upper=value + margin)
            for fraction, value in _increasing(curve)
        ],
    )


def _law_trajectory(law: LawPoint) -> PredictedTrajectory:
    along = law.trajectory
    level = law.prediction.intervals.level if law.prediction.intervals is not None else LEVEL
    end = along[-1]
    return PredictedTrajectory(
        source=(
            f"the ladder's loss law at the target's size, at {len(along)} token counts along the run: forgetting "
            f"{end.forgetting:.4f} at the end, upper bound {end.interval.high:.4f} ({level:.0%}); an extrapolation "
            f"from rungs {', '.join(law.laws.rungs)} to {law.target.name}"
        ),
        level=level,
        points=[
            PredictedPoint(tokens=0.0, forgetting=0.0, forgetting_upper=0.0),  # the base, by definition
            *(
                PredictedPoint(
                    tokens=p.tokens, forgetting=p.forgetting, forgetting_upper=max(p.interval.high, p.forgetting)
                )
                for p in along
            ),
        ],
    )


def _upper_at_end(point: PromotedPoint, result: TrialResult | None) -> float | None:
    if point.forgetting_interval is not None:
        return max(point.forgetting_interval[1], point.forgetting)
    if result is not None and result.text_error is not None:
        return point.forgetting + ONE_SIDED_90 * result.text_error.forgetting
    return None


def _trial_result(run: RunDir, trial: int | None) -> TrialResult | None:
    if trial is None or not run.trial_result(trial).is_file():
        return None
    try:
        return read_model(run.trial_result(trial), TrialResult, fmt=TRIAL_RESULT)
    except CorruptFile as error:
        raise PromotionError(str(error)) from None


def _increasing(curve: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Strictly increasing in tokens (the last of a repeated fraction kept), as PredictedTrajectory requires."""
    kept: dict[float, float] = {}
    for fraction, value in curve:
        kept[fraction] = value
    return sorted(kept.items())
