"""ladder.json: a ladder run's rungs and their picks, the lines fitted through them, the prediction of the
largest rung made from the smaller ones before its trials ran, and that prediction against what it measured.

Written by `sweep run` as a LadderSummary and read back through the same type (a corrupt file is an input
error naming it) by promotion and the report.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import Any

from pydantic import Field, model_validator

from sweep.choice.best import BestSummary
from sweep.choice.pick import PickSource
from sweep.choice.surrogate import fit_surrogate, point_key
from sweep.files.records import read_model, write_model
from sweep.files.rundir import RunDir
from sweep.ladder.config import MAX_RUNGS, MIN_RUNGS, RungName
from sweep.ladder.fit import Interval, LineFit, Quantity, fit_line
from sweep.ladder.rungs import RungSpec, centre, space_params
from sweep.spec.space import SearchSpace
from sweep.study.row import TrialRow
from train_entry.config import StrictConfig
from train_entry.mix import Mix, MixRatio


class LadderMismatch(ValueError):
    """The run directory holds a ladder of other rungs: resuming would mix two ladders."""


class RungResult(StrictConfig):
    """One finished rung: its size and its pick, in the fits' coordinates."""

    name: RungName
    parameters: int = Field(gt=0)
    """Non-embedding parameters."""
    trial_tokens: int = Field(gt=0)
    pick_source: PickSource | None
    """None: the rung has no pick (nothing within the budget) and is left out of the fits."""
    lr_fraction: float | None
    mix: str | None
    values: dict[Quantity, float]
    """The quantities this rung has: the reference ones need a surrogate, the others a pick."""


class Prediction(StrictConfig):
    """The largest rung's pick as the smaller rungs' lines predict it, fixed before its trials ran."""

    rung: RungName
    parameters: int = Field(gt=0)
    from_rungs: list[RungName]
    estimates: dict[Quantity, Interval]
    enqueued: dict[str, Any]
    """The predicted point as trial params inside the space (clipped, or the nearest listed value): the largest
    rung's first trial."""
    written_at: dt.datetime


class Validation(StrictConfig):
    """The prediction against the largest rung's own measurement."""

    rung: RungName
    trial: int | None
    """The trial run at the predicted point; None when it is not found (the study was changed by hand)."""
    trial_status: str | None
    predicted: dict[Quantity, float]
    """The prediction's means."""
    measured: dict[Quantity, float]
    """The largest rung's own pick (its RungResult values)."""
    at_predicted_point: dict[Quantity, float]
    """Gain and forgetting of the predicted point at this size: the trial's final values (when it completed)."""
    surrogate_at_predicted_point: dict[Quantity, float]
    """The rung's surrogate at the predicted point (smoother than one trial); empty without a surrogate."""
    within_interval: dict[Quantity, bool | None]
    """Whether the measured value fell in the prediction's interval; None without an interval."""


class LadderSummary(StrictConfig):
    """Read back from a run directory that may have been copied or received: every rung name it holds names a
    folder under rungs/, so each is one plain path component, and the finished rungs are the planned ones."""

    target: str = Field(min_length=1, max_length=1000)
    """The spec's ladder.target: what the report's band reaches to."""
    forgetting_budget: float
    reference_lr_fraction: float = Field(gt=0.0)
    reference_mix: Mix
    trial_tokens_per_parameter: float = Field(gt=0.0)
    """D / N of every rung's trials (the largest rung's; smaller ones round up to a few evaluations)."""
    pretrain_tokens_per_parameter: float | None
    """Of the built-in rungs' bases; None for Hugging Face rungs."""
    planned: list[RungName] = Field(min_length=MIN_RUNGS, max_length=MAX_RUNGS)
    space: SearchSpace | None = None
    """What every rung searched: promotion clips the lines' point into it. None in a ladder.json written before
    it was kept."""
    sizes: dict[RungName, int] = Field(default_factory=dict)
    """Each planned rung's non-embedding parameters, for `sweep status` before it finishes; empty in a
    ladder.json written before it was kept."""
    rungs: list[RungResult]
    """The finished rungs, smallest first."""
    prediction: Prediction | None = None
    prediction_note: str = ""
    """Why there is no prediction, when there is none."""
    fits: dict[Quantity, LineFit] = Field(default_factory=dict)
    """Over every rung with a pick, once all have finished."""
    validation: Validation | None = None

    @model_validator(mode="after")
    def _rungs_are_planned(self) -> LadderSummary:
        done = [rung.name for rung in self.rungs]
        if len(set(self.planned)) < len(self.planned) or done != self.planned[: len(done)]:
            raise ValueError(f"the finished rungs {done} are not the first of the planned rungs {self.planned}")
        if not set(self.sizes) <= set(self.planned) or any(size <= 0 for size in self.sizes.values()):
            raise ValueError(f"sizes {self.sizes} are not positive parameter counts of planned rungs")
        named = [self.prediction.rung] if self.prediction is not None else []
        named += [self.validation.rung] if self.validation is not None else []
        if any(name != self.planned[-1] for name in named):
            raise ValueError(f"the prediction and its validation are of the largest rung, {self.planned[-1]}")
        return self

    @property
    def finished(self) -> bool:
        return [rung.name for rung in self.rungs] == self.planned

    def extrapolate(self, parameters: float) -> dict[Quantity, Interval]:
        return {quantity: fit.predict(parameters) for quantity, fit in self.fits.items()}


def read_ladder(run: RunDir) -> LadderSummary:
    """CorruptFile (an input error, exit 2) naming ladder.json when it is not what `sweep run` wrote."""
    return read_model(run.ladder_json, LadderSummary, what="ladder summary")


def write_ladder(run: RunDir, summary: LadderSummary) -> None:
    write_model(run.inside(run.ladder_json), summary)


def reference_point(space: SearchSpace, reference: tuple[float, MixRatio] | None) -> tuple[float, float]:
    """(lr_fraction, log mix ratio) of the ladder's reference point; the space's centre by default."""
    if reference is None:
        return centre(space)
    return reference[0], reference[1].log_ratio


def rung_result(
    rung: RungSpec, summary: BestSummary, rows: list[TrialRow], reference: tuple[float, float]
) -> RungResult:
    """A finished rung's pick and its values at the reference point (from a surrogate of its rows)."""
    pick = summary.pick
    point = pick.point
    values: dict[Quantity, float] = {}
    if point is not None:
        values[Quantity.LOG_LR_FRACTION] = math.log(point.lr_fraction)
        values[Quantity.LOG_MIX_RATIO] = MixRatio.parse(point.mix).log_ratio
        gain = pick.gain.mean if pick.gain is not None else point.measured_gain
        forgetting = pick.forgetting.mean if pick.forgetting is not None else point.measured_forgetting
        values |= {q: v for q, v in ((Quantity.GAIN, gain), (Quantity.FORGETTING, forgetting)) if v is not None}
    values |= _at(
        rows, rung.spec.space, reference, gain=Quantity.REFERENCE_GAIN, forgetting=Quantity.REFERENCE_FORGETTING
    )
    return RungResult(
        name=rung.name,
        parameters=rung.parameters,
        trial_tokens=rung.trial_tokens,
        pick_source=pick.source if pick is not None else None,
        lr_fraction=point.lr_fraction if point is not None else None,
        mix=point.mix if point is not None else None,
        values=values,
    )


def _at(
    rows: list[TrialRow], space: SearchSpace, point: tuple[float, float], *, gain: Quantity, forgetting: Quantity
) -> dict[Quantity, float]:
    """The surrogate's means at (lr_fraction, log mix ratio); empty with too few points for one."""
    surrogate = fit_surrogate(rows, space)
    if surrogate is None:
        return {}
    share = 1.0 / (1.0 + math.exp(point[1]))
    gains, forgettings = surrogate.predict([point[0]], [share])
    return {gain: float(gains.mean[0]), forgetting: float(forgettings.mean[0])}


def fit_rungs(rungs: Sequence[RungResult]) -> dict[Quantity, LineFit]:
    """One line per quantity over the rungs that have it."""
    fits = {}
    for quantity in Quantity:
        having = [rung for rung in rungs if quantity in rung.values]
        fit = fit_line([rung.parameters for rung in having], [rung.values[quantity] for rung in having])
        if fit is not None:
            fits[quantity] = fit
    return fits


def predict(smaller: Sequence[RungResult], largest: RungSpec) -> tuple[Prediction | None, str]:
    """The largest rung's pick from the smaller rungs' lines, and the point to enqueue; None and why without."""
    fits = fit_rungs(smaller)
    if Quantity.LOG_LR_FRACTION not in fits or Quantity.LOG_MIX_RATIO not in fits:
        with_pick = [rung.name for rung in smaller if rung.pick_source is not None]
        return None, f"no prediction: {len(with_pick)} smaller rung(s) with a pick ({', '.join(with_pick)}), 2 needed"
    estimates = {quantity: fit.predict(largest.parameters) for quantity, fit in fits.items()}
    lr = math.exp(estimates[Quantity.LOG_LR_FRACTION].mean)
    enqueued = space_params(largest.spec.space, lr, estimates[Quantity.LOG_MIX_RATIO].mean)
    prediction = Prediction(
        rung=largest.name,
        parameters=largest.parameters,
        from_rungs=[rung.name for rung in smaller],
        estimates=estimates,
        enqueued=enqueued,
        written_at=dt.datetime.now(dt.UTC).replace(microsecond=0),
    )
    return prediction, ""


def validate(prediction: Prediction, measured: RungResult, rows: list[TrialRow], space: SearchSpace) -> Validation:
    """The prediction against the largest rung: its pick, and the predicted point's own trial and surrogate."""
    point = space.point(prediction.enqueued)
    key = point_key(point.lr_fraction, point.mix.domain_share)
    trial = min(
        (row for row in rows if row.replicate_of is None and point_key(row.lr_fraction, row.domain_share) == key),
        key=lambda row: row.number,
        default=None,
    )
    at_trial = {}
    if trial is not None and trial.domain_gain is not None and trial.forgetting is not None and trial.finished:
        at_trial = {Quantity.GAIN: trial.domain_gain, Quantity.FORGETTING: trial.forgetting}
    predicted = {quantity: interval.mean for quantity, interval in prediction.estimates.items()}
    return Validation(
        rung=prediction.rung,
        trial=trial.number if trial is not None else None,
        trial_status=trial.status.value if trial is not None else None,
        predicted=predicted,
        measured=measured.values,
        at_predicted_point=at_trial,
        surrogate_at_predicted_point=_at(
            rows, space, (point.lr_fraction, point.mix.log_ratio), gain=Quantity.GAIN, forgetting=Quantity.FORGETTING
        ),
        within_interval={
            quantity: interval.contains(measured.values[quantity])
            for quantity, interval in prediction.estimates.items()
            if quantity in measured.values
        },
    )
