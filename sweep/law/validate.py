"""Leave-one-rung-out: each rung predicted from the others, a check that can fail.

For each rung, the law fitted to the other rungs predicts the rung's optimum at its own N, tokens and LR schedule,
with bootstrap intervals; the law fitted to the rung's own trials gives the optimum those trials support, and its
gain and forgetting at the predicted point (and, when a trial ran at the predicted point, what it measured). A fold
covers when its intervals hold the held-out values. The ladder's acceptance figures (docs/ladder.md) are read off
these folds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import Field

from sweep.law.config import LawSettings
from sweep.law.fit import LawFitError
from sweep.law.optimum import Point, SearchBox, at, constrained_optimum
from sweep.law.predict import Progress, predict
from sweep.law.prediction import TargetPrediction
from sweep.law.select import fit_forms
from sweep.law.table import LawInputError, ObservationTable
from sweep.study.config import PickConfig
from sweep.target.scale import TargetScale
from train_entry.config import StrictConfig

MIN_RUNGS = 3
"""A fold fits the others' law across N: at least two other sizes."""
SAME_POINT = (0.02, 0.01)
"""A trial ran at the predicted point when its lr_fraction is within 2 % and its domain share within 0.01 of it."""
LR_RATIO = 1.3
SHARE_ERROR = 0.07
FORGETTING_ERROR = 0.002
GAIN_SHORTFALL = 0.005
UNCOVERED_FOLDS = 1
"""The ladder's targets for a fold (issue 22, docs/ladder.md): the optimum's lr_fraction within x1.3 and domain share
within 0.07 of the held-out rung's own, the forgetting predicted at the predicted point within 0.002 of the rung's
there, the rung's gain there at most 0.005 below its own optimum's; and the 90 % intervals covering in all folds but
at most one."""


class FoldErrors(StrictConfig):
    """How far one fold's prediction fell from its held-out rung; None where the fold has no optimum to compare."""

    rung: str
    lr_ratio: float | None
    """The predicted optimum's lr_fraction over the rung's own."""
    share_error: float | None
    """The predicted optimum's domain share less the rung's own."""
    forgetting_error: float | None
    """The forgetting predicted at the predicted point less the rung's there (a trial's when one ran there, else its
    own law's)."""
    gain_shortfall: float | None
    """The rung's own optimum's gain less its gain at the predicted point."""
    covered: bool

    @property
    def met(self) -> dict[str, bool | None]:
        """Each target met, missed, or (None) not measurable."""
        return {
            "lr_fraction": None if self.lr_ratio is None else max(self.lr_ratio, 1 / self.lr_ratio) <= LR_RATIO,
            "domain_share": None if self.share_error is None else abs(self.share_error) <= SHARE_ERROR,
            "forgetting": None if self.forgetting_error is None else abs(self.forgetting_error) <= FORGETTING_ERROR,
            "domain_gain": None if self.gain_shortfall is None else self.gain_shortfall <= GAIN_SHORTFALL,
        }


class Coverage(StrictConfig):
    """Whether the prediction's 90 % intervals hold each held-out value (None: no interval or no value)."""

    lr_fraction: bool | None
    domain_share: bool | None
    domain_gain: bool | None
    forgetting: bool | None

    @property
    def complete(self) -> bool:
        """Every value that could be checked was covered, and at least one could."""
        checked = [value for value in self.model_dump().values() if value is not None]
        return bool(checked) and all(checked)


class RungFold(StrictConfig):
    """One rung held out."""

    rung: str
    predicted: TargetPrediction
    """From the other rungs' law, at this rung's N, tokens and LR schedule."""
    own: Point | None
    """The optimum of the law fitted to this rung's own trials (None: none meets the budget, or its fit failed)."""
    own_toward: list[str]
    own_at_predicted: Point | None
    """This rung's own law at the predicted point."""
    measured_at_predicted: Point | None
    """The mean final evaluation of this rung's trials at the predicted point, when any ran there."""
    coverage: Coverage

    @property
    def errors(self) -> FoldErrors:
        predicted, own = self.predicted.optimum, self.own
        there = self.measured_at_predicted or self.own_at_predicted
        both = predicted is not None and own is not None
        return FoldErrors(
            rung=self.rung,
            lr_ratio=predicted.lr_fraction / own.lr_fraction if both else None,
            share_error=predicted.domain_share - own.domain_share if both else None,
            forgetting_error=predicted.forgetting - there.forgetting if predicted and there else None,
            gain_shortfall=own.domain_gain - there.domain_gain if own and there else None,
            covered=self.coverage.complete,
        )


class LeaveOneRungOut(StrictConfig):
    folds: list[RungFold] = Field(min_length=1)

    @property
    def covered(self) -> int:
        """Folds whose intervals held every held-out value they could be checked against."""
        return sum(fold.coverage.complete for fold in self.folds)

    @property
    def coverage_met(self) -> bool:
        return len(self.folds) - self.covered <= UNCOVERED_FOLDS


def leave_one_rung_out(
    table: ObservationTable,
    box: SearchBox,
    budget: float,
    settings: LawSettings,
    pick: PickConfig,
    *,
    held_out: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> LeaveOneRungOut:
    """Each rung (or each of `held_out`) predicted from the others; LawInputError with fewer than MIN_RUNGS rungs
    or a rung the table does not have."""
    rungs = table.rungs
    if len(rungs) < MIN_RUNGS:
        raise LawInputError(
            f"leave-one-rung-out needs at least {MIN_RUNGS} rungs, so that the others span two sizes; got "
            f"{len(rungs)} ({', '.join(rungs)})"
        )
    unknown = sorted(set(held_out or ()) - set(rungs))
    if unknown:
        raise LawInputError(f"no rung named {', '.join(map(repr, unknown))} to hold out; the rungs: {', '.join(rungs)}")
    folds = []
    for rung in held_out or rungs:
        if progress is not None:
            progress(f"leave-one-rung-out: predicting rung {rung} from the others")
        folds.append(_fold(table, rung, box, budget, settings, pick))
    return LeaveOneRungOut(folds=folds)


def _fold(
    table: ObservationTable, rung: str, box: SearchBox, budget: float, settings: LawSettings, pick: PickConfig
) -> RungFold:
    held_out, others = table.only(rung), table.without(rung)
    target = rung_scale(table, rung)
    predicted = predict(others, fit_forms(others, settings), target, box, budget, settings, pick)
    try:
        own_law = fit_forms(held_out, settings).stacked()
    except LawFitError:
        own_law = None
    own = constrained_optimum(own_law, target, box, budget) if own_law else None
    point = predicted.optimum
    own_there = at(own_law, target, point.lr_fraction, point.domain_share) if own_law and point else None
    measured = _measured(table, rung, point) if point else None
    return RungFold(
        rung=rung,
        predicted=predicted,
        own=own.point if own else None,
        own_toward=own.toward if own else [],
        own_at_predicted=own_there,
        measured_at_predicted=measured,
        coverage=_coverage(predicted, own.point if own else None, measured or own_there),
    )


def rung_scale(table: ObservationTable, rung: str) -> TargetScale:
    """A rung as a target: its N, its base's pretraining tokens, the tokens its completed trials read, and their
    schedule's mean LR."""
    final = table.final(rung)
    first = final[0]
    return TargetScale(
        name=rung,
        parameters=float(table.parameters[first]),
        tokens=float(table.tokens[first]),
        pretrain_tokens=float(table.pretrain_tokens[first]),
        lr_mean=float(np.median(table.lr_mean[final])),
    )


def _measured(table: ObservationTable, rung: str, point: Point) -> Point | None:
    lr_tolerance, share_tolerance = SAME_POINT
    final = table.final(rung)
    near = (np.abs(np.log(table.lr_fraction[final] / point.lr_fraction)) <= lr_tolerance) & (
        np.abs(table.domain_share[final] - point.domain_share) <= share_tolerance
    )
    there = final[near]
    if not len(there):
        return None
    return Point(
        lr_fraction=point.lr_fraction,
        domain_share=point.domain_share,
        domain_gain=float(np.mean(table.domain_gain[there])),
        forgetting=float(np.mean(table.forgetting[there])),
    )


def _coverage(predicted: TargetPrediction, own: Point | None, there: Point | None) -> Coverage:
    intervals = predicted.intervals

    def covers(interval_name: str, point: Point | None, field: str) -> bool | None:
        if intervals is None or point is None:
            return None
        return getattr(intervals, interval_name).contains(getattr(point, field))

    return Coverage(
        lr_fraction=covers("lr_fraction", own, "lr_fraction"),
        domain_share=covers("domain_share", own, "domain_share"),
        domain_gain=covers("domain_gain", there, "domain_gain"),
        forgetting=covers("forgetting", there, "forgetting"),
    )
