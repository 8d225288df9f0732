"""The prediction at a target, with its uncertainty: the law's constrained optimum, 90 % intervals from bootstrap
refits (rungs resampled, then trials within them), P(forgetting within budget) as the share of refits that keep
it at the promoted point, and a refusal instead of a number when the law cannot stand behind one.

Every figure of a prediction is evaluated at the point it would promote (the full fit's optimum as a plan writes
it, sweep.ladder.law_optimum.promotable): its gain and forgetting intervals are the refits' laws there, not at
each refit's own optimum, whose spread is the position intervals'.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from pydantic import Field

from sweep.ladder.config import LawSettings
from sweep.ladder.law import Law
from sweep.ladder.law_fit import LawFitError, fit_law
from sweep.ladder.law_optimum import (
    Point,
    Refusal,
    SearchBox,
    TargetScale,
    at,
    constrained_optimum,
    credibility,
    promotable,
)
from sweep.ladder.law_table import ObservationTable
from train_entry.config import StrictConfig


class Interval(StrictConfig):
    low: float
    high: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


class Intervals(StrictConfig):
    """Central intervals over the bootstrap refits, at the prediction's level."""

    level: float
    lr_fraction: Interval
    """Of the refits' own optima."""
    domain_share: Interval
    domain_gain: Interval
    """Of the refits' laws at the promoted point."""
    forgetting: Interval


class TargetPrediction(StrictConfig):
    """What the law says at one target."""

    target: TargetScale
    budget: float = Field(ge=0.0)
    box: SearchBox
    optimum: Point | None
    """The law's constrained optimum wherever it lies (outside the box it is the reason for a refusal, never a
    number to promote); None when no point meets the budget."""
    toward: list[str]
    intervals: Intervals | None
    within_budget: float | None = Field(None, ge=0.0, le=1.0)
    """P(forgetting <= budget) at the optimum: the share of refits whose law keeps it there."""
    refits: int = Field(ge=0)
    refits_outside: int = Field(ge=0)
    """Refits whose optimum lies outside the box."""
    refits_without: int = Field(ge=0)
    """Refits with no optimum: no point met the budget, the fit failed, or the resample could not extrapolate."""
    refusal: Refusal | None

    @property
    def credible(self) -> bool:
        return self.refusal is None


@dataclass(frozen=True)
class _Refit:
    point: Point | None
    toward: tuple[str, ...]
    at_optimum: Point | None
    """The refit's law at the full fit's optimum."""


def predict(
    table: ObservationTable, law: Law, target: TargetScale, box: SearchBox, budget: float, settings: LawSettings
) -> TargetPrediction:
    """The law's optimum at `target` with bootstrap intervals, or a refusal saying why there is none."""
    refused = credibility(law, target, table)
    optimum = None if refused else constrained_optimum(law, target, box, budget)
    point = promotable(law, target, optimum.point) if optimum and optimum.point else None
    refits = _refits(table, law, target, box, budget, settings, point) if point is not None else []
    prediction = TargetPrediction(
        target=target,
        budget=budget,
        box=box,
        optimum=point,
        toward=list(optimum.toward) if optimum else [],
        intervals=_intervals(refits, settings.level),
        within_budget=_within_budget(refits, budget),
        refits=len(refits),
        refits_outside=sum(1 for refit in refits if refit.point is not None and refit.toward),
        refits_without=sum(1 for refit in refits if refit.point is None),
        refusal=refused,
    )
    if refused is None and optimum is not None:
        refusal = _refusal(prediction, optimum.least_forgetting, refits, settings)
        prediction = prediction.model_copy(update={"refusal": refusal})
    return prediction


def _refits(
    table: ObservationTable,
    law: Law,
    target: TargetScale,
    box: SearchBox,
    budget: float,
    settings: LawSettings,
    promoted: Point,
) -> list[_Refit]:
    rng = np.random.default_rng(settings.seed)
    refits = []
    for index in range(settings.refits):
        sample = table.resampled(rng)
        seeded = settings.model_copy(update={"seed": (settings.seed + 1 + index) % 2**32})
        try:
            refit = fit_law(sample, seeded, warm=law, starts=settings.refit_starts)
        except LawFitError:
            refits.append(_Refit(None, (), None))
            continue
        here = at(refit, target, promoted.lr_fraction, promoted.domain_share)
        if credibility(refit, target, sample) is not None:
            refits.append(_Refit(None, (), here))
            continue
        optimum = constrained_optimum(refit, target, box, budget)
        refits.append(_Refit(optimum.point, tuple(optimum.toward), here))
    return refits


def _interval(values: list[float], level: float) -> Interval:
    tail = 50.0 * (1.0 - level)
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return Interval(low=float(low), high=float(high))


def _intervals(refits: list[_Refit], level: float) -> Intervals | None:
    points = [refit.point for refit in refits if refit.point is not None]
    there = [refit.at_optimum for refit in refits if refit.at_optimum is not None]
    if not points or not there:
        return None
    return Intervals(
        level=level,
        lr_fraction=_interval([p.lr_fraction for p in points], level),
        domain_share=_interval([p.domain_share for p in points], level),
        domain_gain=_interval([p.domain_gain for p in there], level),
        forgetting=_interval([p.forgetting for p in there], level),
    )


def _within_budget(refits: list[_Refit], budget: float) -> float | None:
    there = [refit.at_optimum for refit in refits if refit.at_optimum is not None]
    return sum(point.forgetting <= budget for point in there) / len(there) if there else None


def _refusal(prediction: TargetPrediction, least: float, refits: list[_Refit], settings: LawSettings) -> Refusal | None:
    name, point = prediction.target.name, prediction.optimum
    if point is None:
        return Refusal(
            kind="no_credible_prediction",
            message=f"no credible prediction at {name}: no lr_fraction and mix near the searched box keep forgetting "
            f"within the budget {prediction.budget:.4g}; the least the law predicts is {least:.4g}",
        )
    where = f"lr_fraction {point.lr_fraction:.3g} and mix {point.mix} (domain share {point.domain_share:.3g})"
    if prediction.toward:
        return Refusal(
            kind="extend_space",
            message=f"extend the space toward {' and '.join(prediction.toward)}: the law's optimum at {name}, "
            f"{where}, lies outside the searched box",
        )
    astray = prediction.refits_outside + prediction.refits_without
    if not refits or astray <= settings.outside_limit * len(refits):
        return None
    share = f"{astray} of {len(refits)} bootstrap refits ({astray / len(refits):.0%})"
    sides = Counter(side for refit in refits if refit.point is not None for side in refit.toward)
    common = [side for side, count in sides.most_common() if count > astray / 2]
    if common and prediction.refits_outside >= prediction.refits_without:
        return Refusal(
            kind="extend_space",
            message=f"extend the space toward {' and '.join(common)}: {share} put the optimum at {name} outside the "
            f"searched box (the full fit's is inside, at {where})",
        )
    return Refusal(
        kind="no_credible_prediction",
        message=f"no credible prediction at {name}: {share} put the optimum outside the searched box or find none "
        f"(the full fit's is at {where}), more than the {settings.outside_limit:.0%} a prediction may lose",
    )
