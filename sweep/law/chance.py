"""The law's answer under the pick's rule (objective.pick, sweep.study.config.PickConfig): among the points whose
P(forgetting <= budget) reaches `min_probability`, the one of highest lower-confidence domain_gain (the mean less
`gain_lower_sd` standard deviations), with P and the spread read off an ensemble of laws (the bootstrap refits of
every credible form, in proportion to its weight). The mean-constrained optimum of a single law keeps P near one
half by construction, since the budget binds there; this rule keeps the answer off the budget's edge by as much as
the law does not know.

The ensemble is evaluated on one grid of (log lr_fraction, share) around the searched box (P is a step function of
the refits, which no gradient method can follow), the best point refined on a finer grid around it, and checked
again where a plan would write it (sweep.law.optimum.promotable_position).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sweep.law.optimum import (
    SHARE_LIMITS,
    Point,
    SearchBox,
    Surface,
    at,
    constrained_optimum,
    evaluate,
    log_lr_limits,
    promotable_position,
)
from sweep.study.config import PickConfig
from sweep.target.scale import TargetScale

STEPS = (0.09, 0.99 / 60)
"""The ensemble's grid: steps of 9 % in lr_fraction and 0.0165 in share, on a lattice fixed whatever the box (only
its extent follows the box), so that a box a little wider or narrower moves no point of it; over the widened
default box it is 61 x 61 points, which 200 laws evaluate in about a tenth of a second."""
REFINE = 9
"""Points per axis of the finer grid around the best point, spanning one step of the coarse grid each way."""
CANDIDATES = 8
"""The best coarse points refined: along the budget's contour the lower bound is nearly flat, so the best refined
point may grow from the second or fifth coarse one."""
TRIED = 20
"""Coarse candidates (best first) checked at their written position when no refined one holds there: rounding to
4 digits and a 3-digit mix moves a point by less than a grid step, so a refined one almost always holds."""


@dataclass(frozen=True)
class ChancePoint:
    point: Point
    """The point, as a plan writes it, with the answer's mean law there."""
    probability: float
    """P(forgetting <= budget) there: the share of the ensemble's laws that keep the budget."""
    lower_gain: float
    """The ensemble's mean domain_gain there less pick.gain_lower_sd of its standard deviations."""


@dataclass(frozen=True)
class EnsembleAnswer:
    chance: ChancePoint | None
    """None: no point reaches min_probability."""
    inside: ChancePoint | None
    """The rule's best point inside the searched box (the chance point itself when it lies inside; None when no
    point inside reaches min_probability): what is promoted when the chance point lies beyond the box by a gain no
    trial could tell apart (sweep.law.predict)."""
    best_probability: float
    """The largest P anywhere on the grid: what a refused answer falls short by."""
    optima: list[Point | None]
    """Each law's own mean-constrained optimum, refined by SLSQP as the answer's mean law's is (None: no point keeps
    its forgetting within the budget): along the budget's contour the gain is nearly flat, and the best point of a
    grid scatters along it by more than the refits do."""


def ensemble_answer(
    laws: Sequence[Surface], mean: Surface, target: TargetScale, box: SearchBox, budget: float, pick: PickConfig
) -> EnsembleAnswer:
    """The pick's rule over the ensemble `laws` (at least one), with `mean` (the answer's own law) giving the
    figures at the chosen point: around the box, and within it when the point found lies beyond."""
    grid_lr, grid_share = lattice_points(box)
    around = _Rule(laws, target, budget, pick, log_lr_limits(box), SHARE_LIMITS)
    probability, lower = around.scores(*around.values(grid_lr, grid_share))
    chance = around.best(mean, grid_lr, grid_share, probability, lower)
    inside = chance
    if chance is not None and box.outside(chance.point.lr_fraction, chance.point.domain_share):
        lr_low, lr_high = box.lr_fraction
        within = _Rule(laws, target, budget, pick, (math.log(lr_low), math.log(lr_high)), box.domain_share)
        kept = box.holds(grid_lr, grid_share)
        inside = within.best(mean, grid_lr, grid_share, np.where(kept, probability, 0.0), lower)
        inside = inside if inside is not None and not box.outside(*_position(inside)) else None
    optima = [constrained_optimum(law, target, box, budget).point for law in laws]
    return EnsembleAnswer(chance=chance, inside=inside, best_probability=float(np.max(probability)), optima=optima)


def _position(chance: ChancePoint) -> tuple[float, float]:
    return chance.point.lr_fraction, chance.point.domain_share


@dataclass(frozen=True)
class _Rule:
    laws: Sequence[Surface]
    target: TargetScale
    forgetting_budget: float
    pick: PickConfig
    limits: tuple[float, float]
    """Of log lr_fraction: where the optimum is looked for."""
    share_limits: tuple[float, float]
    """Of the domain share."""

    def best(
        self, mean: Surface, grid_lr: np.ndarray, grid_share: np.ndarray, probability: np.ndarray, lower: np.ndarray
    ) -> ChancePoint | None:
        """The qualifying lattice points best first, the best CANDIDATES refined, and the first that holds where a
        plan writes it."""
        ranked = np.flatnonzero(probability >= self.pick.min_probability)
        ranked = ranked[np.argsort(-lower[ranked], kind="stable")]
        refined = sorted(
            (self.refined(grid_lr[index], grid_share[index], STEPS) for index in ranked[:CANDIDATES]),
            key=lambda r: -r[0],
        )
        for _, log_lr, share in refined + [(0.0, grid_lr[index], grid_share[index]) for index in ranked[:TRIED]]:
            chance = self.written(mean, log_lr, share)
            if chance is not None:
                return chance
        return None

    def around(self, log_lr: float, share: float, steps: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
        """A REFINE x REFINE grid one coarse step each way around a point, within the limits."""
        axes = (
            np.clip(np.linspace(log_lr - steps[0], log_lr + steps[0], REFINE), *self.limits),
            np.clip(np.linspace(share - steps[1], share + steps[1], REFINE), *self.share_limits),
        )
        fine_lr, fine_share = np.meshgrid(*axes, indexing="ij")
        return fine_lr.ravel(), fine_share.ravel()

    def values(self, log_lr: np.ndarray, share: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """domain_gain and forgetting of every law at every point: arrays of (laws, points)."""
        pairs = [evaluate(law, self.target, log_lr, share) for law in self.laws]
        gain = np.array([np.broadcast_to(g, np.shape(log_lr)) for g, _ in pairs])
        return gain, np.array([np.broadcast_to(f, np.shape(log_lr)) for _, f in pairs])

    def scores(self, gain: np.ndarray, forgetting: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """P(forgetting <= budget) and the lower-confidence gain at each point; a law that overflows there counts
        as over the budget and sends the gain's bound to -inf."""
        probability = np.mean(np.nan_to_num(forgetting, nan=np.inf) <= self.forgetting_budget, axis=0)
        with np.errstate(invalid="ignore", over="ignore"):
            lower = np.mean(gain, axis=0) - self.pick.gain_lower_sd * np.std(gain, axis=0)
        return probability, np.where(np.all(np.isfinite(gain), axis=0), lower, -np.inf)

    def refined(self, log_lr: float, share: float, steps: tuple[float, float]) -> tuple[float, float, float]:
        """The lower-confidence gain and position of the best qualifying point of finer grids around (log_lr,
        share): one coarse step each way, then a quarter step around the best of that."""
        best = (-np.inf, log_lr, share)
        for scale in (1.0, 0.25):
            fine_lr, fine_share = self.around(best[1], best[2], (steps[0] * scale, steps[1] * scale))
            probability, lower = self.scores(*self.values(fine_lr, fine_share))
            qualifying = np.flatnonzero(probability >= self.pick.min_probability)
            if len(qualifying):
                index = qualifying[int(np.argmax(lower[qualifying]))]
                if lower[index] >= best[0]:
                    best = (float(lower[index]), float(fine_lr[index]), float(fine_share[index]))
        return best

    def written(self, mean: Surface, log_lr: float, share: float) -> ChancePoint | None:
        """The point where a plan writes it, when the rule still holds there."""
        lr_fraction, domain_share = promotable_position(at(mean, self.target, math.exp(log_lr), share))
        gain, forgetting = self.values(np.array([math.log(lr_fraction)]), np.array([domain_share]))
        probability, lower = self.scores(gain, forgetting)
        if probability[0] < self.pick.min_probability or not np.isfinite(lower[0]):
            return None
        point = at(mean, self.target, lr_fraction, domain_share)
        return ChancePoint(point=point, probability=float(probability[0]), lower_gain=float(lower[0]))


def lattice_points(box: SearchBox) -> tuple[np.ndarray, np.ndarray]:
    """Every point (log lr_fraction, share) of the lattice the answer is looked for on, flattened."""
    grid_lr, grid_share = np.meshgrid(*_lattice(box, log_lr_limits(box)), indexing="ij")
    return grid_lr.ravel(), grid_share.ravel()


def _lattice(box: SearchBox, limits: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """The fixed lattice's points within the limits, and the box's own edges."""
    low, high = limits
    log_lr = -STEPS[0] * np.arange(0, int((0.0 - low) / STEPS[0]) + 1)
    log_lr = np.union1d(log_lr[(log_lr >= low) & (log_lr <= high)], np.log(box.lr_fraction))
    share = SHARE_LIMITS[0] + STEPS[1] * np.arange(0, round((SHARE_LIMITS[1] - SHARE_LIMITS[0]) / STEPS[1]) + 1)
    return log_lr, np.union1d(share, box.domain_share)


def probability_at(laws: Sequence[Surface], target: TargetScale, point: Point, budget: float) -> float:
    """P(forgetting <= budget) at `point` over the ensemble."""
    rule = _Rule(laws, target, budget, PickConfig(), (-math.inf, 0.0), SHARE_LIMITS)
    probability, _ = rule.scores(*rule.values(np.array([math.log(point.lr_fraction)]), np.array([point.domain_share])))
    return float(probability[0])
