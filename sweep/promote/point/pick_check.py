"""best.json's pick checked field by field against what it is made of, before it is promoted.

The pick's figures are what the plan copies (its forgetting interval becomes the full run's watch bound, its P the
plan's claim), so each one is checked against its source rather than believed: its source one a sweep's pick can have
(a ladder's law is a plan's, never a sweep's), its domain share its mix's, its trials and measured figures the study's
at its point, each prediction's interval what the surrogate's own constructor (sweep.choice.pick.Prediction.at) gives
from that prediction's mean and spreads, P that prediction's probability of the sweep's budget, in [0, 1] and at
least the plan's rule for a surrogate's pick. A mismatch names the field and both values.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from sweep.choice.pick import Pick, PickedPoint, PickSource, Prediction
from sweep.choice.surrogate import Predictions, completed, point_key
from sweep.files.records import first_difference
from sweep.promote.errors import PromotionError
from sweep.study.row import TrialRow
from sweep.study.study import SweepPlan
from train_entry.config import shown
from train_entry.mix import MixRatio

REWRITE = "run `sweep run SPEC --name RUN` again to write it from the study, or promote another run"
PER_POINT = ("mean", "sd")
"""The fields of a Predictions that hold one value per point (here one point); the others are the metric's own."""


def check_pick(path: Path, pick: Pick, plan: SweepPlan, rows: dict[int, TrialRow]) -> None:
    """PromotionError naming `path` (best.json), the field and both values unless `pick` is what its sources give."""

    def refuse(field: str, stored: object, why: str) -> PromotionError:
        return PromotionError(f"{path}: pick.{field} is {shown(stored)}, but {why}; {REWRITE}")

    if pick.source is PickSource.LADDER:
        raise refuse("source", pick.source.value, "a sweep's pick is the surrogate's or the best observed trial's "
                     "(a ladder's law is promoted from the ladder's run directory)")  # fmt: skip
    if pick.min_probability != plan.pick.min_probability:
        raise refuse("min_probability", pick.min_probability, f"the sweep's rule asks {plan.pick.min_probability:g}")
    if pick.point is not None:
        _check_point(pick.point, rows, refuse)
    for name in ("gain", "forgetting"):
        stored = getattr(pick, name)
        if stored is not None:
            _check_prediction(name, stored, refuse)
    _check_probability(pick, plan, refuse)


def _check_point(point: PickedPoint, rows: dict[int, TrialRow], refuse) -> None:
    share = MixRatio.parse(point.mix).domain_share  # the mix is in the searched space: provenance checked it first
    if not math.isclose(point.domain_share, share, rel_tol=1e-9):
        raise refuse("point.domain_share", point.domain_share, f"its mix {point.mix} has domain_share {share:g}")
    here = {row.number: row for row in completed(rows.values())}
    key = point_key(point.lr_fraction, share)
    strangers = [
        number
        for number in point.trials
        if number not in here or point_key(here[number].lr_fraction, here[number].domain_share) != key
    ]
    if strangers:
        raise refuse("point.trials", point.trials, f"trial {strangers[0]} is no completed trial of the study at "
                     f"{point.lr_fraction:g} @ {point.mix}")  # fmt: skip
    for name, metric in (("measured_gain", "domain_gain"), ("measured_forgetting", "forgetting")):
        values = [getattr(here[n], metric) for n in point.trials]
        measured = math.fsum(values) / len(values) if values else None
        stored = getattr(point, name)
        if (stored is None) != (measured is None) or (
            stored is not None and not math.isclose(stored, measured, rel_tol=1e-9, abs_tol=1e-12)
        ):
            raise refuse(f"point.{name}", stored, f"its trials {point.trials} measured {shown(measured)}")


def _check_prediction(name: str, stored: Prediction, refuse) -> None:
    """The prediction's interval fields are what Prediction.at makes of its mean and spreads."""
    mismatch = first_difference(stored, Prediction.at(_predictions(stored), 0))
    if mismatch is not None:
        key, value, rebuilt = mismatch
        raise refuse(f"{name}.{key}", value, f"its mean and spreads give {shown(rebuilt)}")


def _check_probability(pick: Pick, plan: SweepPlan, refuse) -> None:
    probability = pick.probability_within_budget
    if probability is None:
        return
    if not 0.0 <= probability <= 1.0:
        raise refuse("probability_within_budget", probability, "a probability lies in [0, 1]")
    if pick.forgetting is None:
        raise refuse("probability_within_budget", probability, "there is no forgetting prediction to give it")
    expected = float(_predictions(pick.forgetting).probability_at_most(plan.forgetting_budget)[0])
    if not math.isclose(probability, expected, rel_tol=1e-9, abs_tol=1e-12):
        raise refuse("probability_within_budget", probability, f"its forgetting prediction gives {expected:.6g} of "
                     f"forgetting within the budget {plan.forgetting_budget:g}")  # fmt: skip
    if pick.source is PickSource.SURROGATE and probability < plan.pick.min_probability:
        raise refuse("probability_within_budget", probability, f"a surrogate's pick keeps the budget with probability "
                     f"at least {plan.pick.min_probability:g} (the sweep's rule)")  # fmt: skip


def _predictions(stored: Prediction) -> Predictions:
    """The surrogate's Predictions at one point that `stored` was made from: its fields of the same names."""
    values = {
        field.name: np.array([getattr(stored, field.name)]) if field.name in PER_POINT else getattr(stored, field.name)
        for field in dataclasses.fields(Predictions)
        if field.name in Prediction.model_fields
    }
    return Predictions(**values)
