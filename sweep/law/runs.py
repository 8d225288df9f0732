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

import numpy as np
from pydantic import Field

from sweep.law.checks import check_fittable
from sweep.law.config import LawSettings
from sweep.law.csv import read_runs_csv
from sweep.law.fit import LawFitError
from sweep.law.model import LossLaw
from sweep.law.optimum import SearchBox, critical_share
from sweep.law.predict import Progress, predict
from sweep.law.prediction import TargetPrediction
from sweep.law.published import CRITICAL_SHARE_TREND, FORGETTING_TREND
from sweep.law.select import Laws, fit_forms
from sweep.law.table import LawInputError, ObservationTable
from sweep.law.validate import LeaveOneRungOut, leave_one_rung_out
from sweep.study.config import PickConfig
from sweep.target.scale import TargetScale
from train_entry.config import StrictConfig

PUBLISHED_TREND = f"grows: {CRITICAL_SHARE_TREND}; {FORGETTING_TREND}"
FLAT = 0.01
"""Critical shares within this of each other across the sizes compared count as no trend."""


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
    laws: Laws
    """Every form fitted, cross-validated and weighted."""
    prediction: TargetPrediction
    trend: Trend
    validation: LeaveOneRungOut | None = None


def fit_runs(
    path: Path,
    target: TargetScale,
    *,
    budget: float,
    settings: LawSettings,
    pick: PickConfig,
    box: SearchBox | None = None,
    validate: bool = False,
    progress: Progress | None = None,
) -> LawFitReport:
    """The law fitted to the runs in `path` and its prediction at `target`; the box defaults to the ranges the runs
    cover. LawInputError for a table that cannot be fitted."""
    table = read_runs_csv(path)
    return fit_table(
        table, target, budget=budget, settings=settings, pick=pick, box=box, validate=validate, source=str(path),
        progress=progress,
    )  # fmt: skip


def fit_table(
    table: ObservationTable,
    target: TargetScale,
    *,
    budget: float,
    settings: LawSettings,
    pick: PickConfig,
    box: SearchBox | None,
    validate: bool,
    source: str,
    progress: Progress | None = None,
) -> LawFitReport:
    """Every form fitted to `table` (a ladder's rungs, a CSV of runs), weighted, and its answer at `target`, with
    each rung held out in turn when `validate`; LawInputError, naming `source`, for a table that cannot be
    fitted."""
    check_fittable(table, source)
    box = box or SearchBox.covering(table)
    try:
        laws = fit_forms(table, settings, progress=progress)
        prediction = predict(table, laws, target, box, budget, settings, pick, progress=progress)
        validation = leave_one_rung_out(table, box, budget, settings, pick, progress=progress) if validate else None
    except LawFitError as exc:
        raise LawInputError(f"{source}: {exc}") from None
    return LawFitReport(
        source=source,
        laws=laws,
        prediction=prediction,
        trend=trend(table, laws.best.law.general, target, budget),
        validation=validation,
    )


def trend(table: ObservationTable, general: LossLaw, target: TargetScale, budget: float) -> Trend:
    """The critical share by the general loss's law at each rung's N and the target's, at the rungs' median final
    lr_fraction and schedule-weighted tokens."""
    finals = [table.final(rung) for rung in table.rungs]
    lr = statistics.median(float(np.median(table.lr_fraction[rows])) for rows in finals)
    time = statistics.median(float(np.median(table.time[rows])) for rows in finals)
    sizes = sorted({table.rung_parameters(rung) for rung in table.rungs} | {target.parameters})
    shares = [CriticalShare(parameters=n, share=critical_share(general, n, lr, time, budget)) for n in sizes]
    known = [entry.share for entry in shares if entry.share is not None]
    if len(known) < 2 or not general.spans.parameters:
        direction = "unknown"
    elif known[-1] - known[0] > FLAT:
        direction = "grows"
    elif known[0] - known[-1] > FLAT:
        direction = "shrinks"
    else:
        direction = "flat"
    return Trend(lr_area=lr * time, shares=shares, direction=direction)
