"""Ladders drawn from known laws the fitter was, and was not, written for, and the judgement of its answer on each:
the validation of issue 39 (docs/ladder.md, "Validation"). Each truth is drawn at four rungs over 1.5 decades of N
with noise at the replicate spread the bundled corpora measure, and its answer is judged two decades beyond the
largest rung: do the 90 % intervals hold the truth's own optimum, does the promoted point keep the truth's
forgetting within the budget, and is a truth outside the searched box refused.

tests/sweep/law/test_law_coverage.py runs a few draws in the default suite and 30 behind `slow`;
benchmarks/law_coverage.py runs any number and prints the table BENCHMARKS.md records.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sweep.law.config import LawSettings
from sweep.law.optimum import SearchBox, Surface, TargetScale, constrained_optimum
from sweep.law.runs import fit_table
from sweep.law.table import lr_mean
from sweep.study.config import PickConfig
from tests.sweep.ladder.synthetic import (
    LR_FRACTIONS,
    PRETRAIN_TOKENS_PER_PARAMETER,
    SCHEDULE,
    SHARES,
    STEPS,
    TOKENS_PER_PARAMETER,
    TRUTH,
    draw,
    known_law,
)

RUNGS = {"a": 100_000, "b": 316_000, "c": 1_000_000, "d": 3_160_000}
"""Four rungs over 1.5 decades of N."""
TARGET = 316_000_000
"""Two decades beyond the largest rung."""
NOISE = (1e-3, 5e-4)
"""sd of forgetting and of domain_gain between seeds at one point: the default spec's replicates on the bundled
corpora (BENCHMARKS.md, decision quality)."""
BUDGET = 0.01
BOX = SearchBox(lr_fraction=(min(LR_FRACTIONS), max(LR_FRACTIONS)), domain_share=(min(SHARES), max(SHARES)))


@dataclass(frozen=True)
class SumLaw:
    """A law none of the fitter's forms contains: forgetting the sum of a saturating term in the LR area alone and
    a term quadratic in the share and linear in the area, domain_gain a saturating area term times a hyperbolic
    share term."""

    size_exponent: float = 0.1

    def forgetting(self, parameters, lr_fraction, time, domain_share):
        area = np.asarray(lr_fraction) * np.asarray(time) / 0.01
        size = (np.asarray(parameters) / 5e5) ** -self.size_exponent
        return size * (0.004 * (1 - np.exp(-2 * area)) + 0.06 * np.asarray(domain_share) ** 2 * area)

    def domain_gain(self, parameters, lr_fraction, time, domain_share):
        area = np.asarray(lr_fraction) * np.asarray(time) / 0.01
        share = np.asarray(domain_share)
        return 0.05 * (1 - np.exp(-3 * area)) * share / (share + 0.2)


def _with_size_exponent(exponent: float):
    general = dict(TRUTH.general.values) | {"size_exponent": exponent}
    return known_law(general, dict(TRUTH.domain.values))


TRUTHS: dict[str, Surface] = {
    "dcpt-area": _with_size_exponent(0.08),
    "replay-area": known_law(
        {"offset": -0.002, "shift": 0.08, "size_exponent": 0.05, "replay_rate": 3.0, "area_rate": 0.3,
         "area_exponent": 1.0},
        {"offset": 0.001, "shift": -0.06, "size_exponent": 0.0, "replay_rate": -3.0, "area_rate": 3.0,
         "area_exponent": 0.5},
        form="replay-area",
    ),
    "sum (no fitted form)": SumLaw(),
}  # fmt: skip
"""Known laws whose optimum at TARGET lies inside BOX: two of the fitter's forms, and one none of them contains."""
OUTSIDE: Surface = _with_size_exponent(0.45)
"""Forgetting that shrinks fast with N: at TARGET the optimum lies above the box's highest lr_fraction."""


def target_scale(parameters: float = TARGET) -> TargetScale:
    """A target matched to the rungs: their tokens and pretraining tokens per parameter and their schedule."""
    return TargetScale(
        name=f"N={parameters:.3g}",
        parameters=parameters,
        tokens=TOKENS_PER_PARAMETER * parameters,
        pretrain_tokens=PRETRAIN_TOKENS_PER_PARAMETER * parameters,
        lr_mean=lr_mean(SCHEDULE, steps=STEPS, total_steps=STEPS),
    )


@dataclass(frozen=True)
class Judged:
    truth: str
    seed: int
    refused: str | None
    """The refusal's kind, or None when the answer was given."""
    covered: bool | None
    """Both 90 % position intervals hold the truth's own optimum (None when refused)."""
    within_budget: bool | None
    """The truth's forgetting at the promoted point is within the budget (None when refused)."""


def judge(name: str, truth: Surface, seed: int, settings: LawSettings, pick: PickConfig = PickConfig()) -> Judged:
    """The law's answer on one draw of `truth`, against the truth."""
    target = target_scale()
    table = draw(truth, noise=NOISE, seed=seed, rungs=RUNGS)
    report = fit_table(
        table, target, budget=BUDGET, settings=settings.model_copy(update={"seed": seed}), pick=pick, box=BOX,
        validate=False, source=f"{name} draw {seed}",
    )  # fmt: skip
    prediction = report.prediction
    if prediction.refusal is not None:
        return Judged(name, seed, prediction.refusal.kind, None, None)
    optimum = constrained_optimum(truth, target, BOX, BUDGET).point
    intervals, point = prediction.intervals, prediction.optimum
    covered = intervals.lr_fraction.contains(optimum.lr_fraction) and intervals.domain_share.contains(
        optimum.domain_share
    )
    true_forgetting = float(truth.forgetting(target.parameters, point.lr_fraction, target.time, point.domain_share))
    return Judged(name, seed, None, covered, true_forgetting <= BUDGET)
