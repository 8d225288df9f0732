"""`sweep law fit RUNS.csv --target T`'s work, without its command line: fit the law to a table of runs, predict the
target's optimum with its intervals or refuse, say how the critical domain share moves with N next to the
published direction, and optionally hold out each rung in turn. Nothing is trained.

The command line resolves the target (its N from sweep.scale, its tokens and LR schedule from the promotion
defaults) and prints `report_lines`; the report itself is a typed record, written as JSON with a format version.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Literal

from pydantic import Field

from sweep.ladder.config import LawSettings
from sweep.ladder.law import Law, LossLaw
from sweep.ladder.law_csv import read_runs_csv
from sweep.ladder.law_fit import LawFitError, fit_law
from sweep.ladder.law_optimum import SearchBox, TargetScale, critical_share
from sweep.ladder.law_predict import TargetPrediction, predict
from sweep.ladder.law_table import LawInputError, ObservationTable
from sweep.ladder.law_validate import LeaveOneRungOut, leave_one_rung_out
from train_entry.config import StrictConfig

PUBLISHED_TREND = (
    "grows: the CMR law's critical share rises from 29.8 % at 460M to 47.8 % at 3.1B parameters "
    "(arXiv:2407.17467, section 5.3); smaller models forget more (arXiv:2502.06042)"
)
FLAT = 0.01
"""Critical shares within this of each other across the sizes compared count as no trend."""
MIN_ROWS = 20
"""Fewer evaluations than this do not determine seven parameters per loss with any margin."""


class CriticalShare(StrictConfig):
    parameters: float
    share: float | None
    """None: no share keeps forgetting within the budget at this N."""


class Trend(StrictConfig):
    """How the critical domain share (the largest that keeps forgetting within the budget) moves with N, at one LR
    area: the median of the rungs' final evaluations, so only N changes."""

    lr_area: float = Field(gt=0.0)
    shares: list[CriticalShare]
    """At each rung's N, smallest first, then the target's."""
    direction: Literal["grows", "shrinks", "flat", "unknown"]
    published: str = PUBLISHED_TREND


class LawFitReport(StrictConfig):
    """What `sweep law fit` found; written with --output."""

    source: str
    law: Law
    prediction: TargetPrediction
    trend: Trend
    validation: LeaveOneRungOut | None = None


def fit_runs(
    path: Path,
    target: TargetScale,
    *,
    budget: float,
    settings: LawSettings,
    box: SearchBox | None = None,
    validate: bool = False,
) -> LawFitReport:
    """The law fitted to the runs in `path` and its prediction at `target`; the box defaults to the ranges the runs
    cover. LawInputError for a table that cannot be fitted."""
    table = read_runs_csv(path)
    return fit_table(table, target, budget=budget, settings=settings, box=box, validate=validate, source=str(path))


def fit_table(
    table: ObservationTable,
    target: TargetScale,
    *,
    budget: float,
    settings: LawSettings,
    box: SearchBox | None,
    validate: bool,
    source: str,
) -> LawFitReport:
    """The law fitted to `table` (a ladder's rungs, a CSV of runs) and its prediction at `target`, with each rung
    held out in turn when `validate`; LawInputError, naming `source`, for a table that cannot be fitted."""
    if len(table) < MIN_ROWS:
        raise LawInputError(f"{source}: {len(table)} evaluations; a law of seven parameters per loss needs {MIN_ROWS}")
    box = box or SearchBox.covering(table)
    try:
        law = fit_law(table, settings)
        validation = leave_one_rung_out(table, box, budget, settings) if validate else None
    except LawFitError as exc:
        raise LawInputError(f"{source}: {exc}") from None
    return LawFitReport(
        source=source,
        law=law,
        prediction=predict(table, law, target, box, budget, settings),
        trend=trend(table, law.general, target, budget),
        validation=validation,
    )


def trend(table: ObservationTable, general: LossLaw, target: TargetScale, budget: float) -> Trend:
    """The critical share by the general loss's law at each rung's N and the target's, at the rungs' median final
    LR area."""
    area = statistics.median(statistics.median(row.lr_area for row in table.final_rows(rung)) for rung in table.rungs)
    sizes = sorted({table.rung_parameters(rung) for rung in table.rungs} | {target.parameters})
    shares = [CriticalShare(parameters=n, share=critical_share(general, n, area, budget)) for n in sizes]
    known = [entry.share for entry in shares if entry.share is not None]
    if len(known) < 2 or not general.spans.parameters:
        direction = "unknown"
    elif known[-1] - known[0] > FLAT:
        direction = "grows"
    elif known[0] - known[-1] > FLAT:
        direction = "shrinks"
    else:
        direction = "flat"
    return Trend(lr_area=area, shares=shares, direction=direction)


def report_lines(report: LawFitReport) -> list[str]:
    """The report as the command prints it."""
    law, prediction = report.law, report.prediction
    fitted = f"{law.rows} evaluations of {law.trials} trials on {len(law.rungs)} rung(s) ({', '.join(law.rungs)})"
    lines = [f"law: fitted to {fitted} from {report.source}"]
    for name, loss, quality in (
        ("forgetting", law.general, law.general_quality),
        ("-domain_gain", law.domain, law.domain_quality),
    ):
        lines.append(f"  {name} = {loss.formula()}")
        lines.append(
            f"    R2 {quality.r2:.4f} over {quality.rows} rows; residual by rung (mean / rms): "
            + ", ".join(f"{r.rung} {r.mean:+.2g} / {r.rms:.2g}" for r in quality.rungs)
        )
    lines.append(
        "  (N: non-embedding parameters; S: lr_fraction x mean LR x tokens / pretraining tokens; r: domain share)"
    )
    return lines + _prediction_lines(prediction) + _trend_lines(report.trend) + _validation_lines(report.validation)


def _prediction_lines(prediction: TargetPrediction) -> list[str]:
    target, box = prediction.target, prediction.box
    searched = (
        f"lr_fraction {box.lr_fraction[0]:g} to {box.lr_fraction[1]:g}, domain share {box.domain_share[0]:.3g} to "
        f"{box.domain_share[1]:.3g}"
    )
    scale = (
        f"N {target.parameters:.4g}, {target.tokens:.4g} tokens after {target.pretrain_tokens:.4g} of pretraining, "
        f"mean LR {target.lr_mean:.3g} of the peak"
    )
    lines = [f"target {target.name}: {scale}; forgetting budget {prediction.budget:.4g}; searched {searched}"]
    if prediction.refusal is not None:
        return lines + [f"refused: {prediction.refusal.message}"]
    point, intervals = prediction.optimum, prediction.intervals
    if point is None:
        return lines
    level = f"{intervals.level:.0%}" if intervals else "no"

    def span(value: float, name: str, digits: str) -> str:
        interval = getattr(intervals, name) if intervals else None
        return f"{value:{digits}}" + (f" [{interval.low:{digits}}, {interval.high:{digits}}]" if interval else "")

    lines.append(
        f"optimum ({level} intervals over {prediction.refits} bootstrap refits): lr_fraction "
        f"{span(point.lr_fraction, 'lr_fraction', '.3g')}, mix {point.mix} (domain share "
        f"{span(point.domain_share, 'domain_share', '.3g')}); at it domain_gain {span(point.domain_gain, 'domain_gain', '.4g')}, "
        f"forgetting {span(point.forgetting, 'forgetting', '.4g')}"
    )
    if prediction.within_budget is not None:
        lines.append(
            f"P(forgetting <= budget) at the optimum: {prediction.within_budget:.2f} (share of refits); "
            f"{prediction.refits_outside} refit(s) put the optimum outside the box, {prediction.refits_without} found none"
        )
    return lines


def _trend_lines(trend: Trend) -> list[str]:
    shares = ", ".join(
        f"{entry.share:.3g} at N {entry.parameters:.3g}"
        if entry.share is not None
        else f"none at N {entry.parameters:.3g}"
        for entry in trend.shares
    )
    return [
        f"critical domain share with N (at LR area {trend.lr_area:.4g}): {trend.direction} ({shares})",
        f"  published: {trend.published}",
    ]


def _validation_lines(validation: LeaveOneRungOut | None) -> list[str]:
    if validation is None:
        return []
    lines = [f"leave-one-rung-out: {validation.covered} of {len(validation.folds)} folds covered by their intervals"]
    for fold in validation.folds:
        predicted, own = fold.predicted.optimum, fold.own
        said = (
            f"refused ({fold.predicted.refusal.kind})"
            if fold.predicted.refusal
            else f"lr_fraction {predicted.lr_fraction:.3g}, share {predicted.domain_share:.3g}"
            if predicted
            else "no optimum"
        )
        mine = f"lr_fraction {own.lr_fraction:.3g}, share {own.domain_share:.3g}" if own else "no optimum"
        mine += " (outside the box)" if fold.own_toward else ""
        lines.append(f"  {fold.rung}: predicted {said}; its own trials' law {mine}; covered {fold.coverage.complete}")
    return lines
