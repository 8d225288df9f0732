"""The refits evaluated once on the answer's lattice (sweep.law.chance), for two questions the answer's refusals ask
of them: what P any sd of the form's error lets a point inside the searched box reach (none, the carried one, a rung
nearer the target's), and whether a refit's best point beyond the box gains materially more than its best inside it
(the runs' evidence that the truth may lie outside the box).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sweep.law.chance import lattice_points
from sweep.law.discrepant import Discrepant
from sweep.law.optimum import SearchBox
from sweep.target.scale import TargetScale

MATERIAL = 1.0
"""A point beyond the box counts as better only when it gains more than this many sds over the best inside, the sd
of the gain there being the replicates' noise and the form's error at the target together: along the budget's
contour the gain is nearly flat, and a refit whose optimum drifts past the box by a gain that no trial could tell
apart, or that a form missing its rungs could make up, says nothing about where to search."""


@dataclass(frozen=True)
class Beyond:
    """One refit's verdict on the box."""

    feasible: bool
    """Some point keeps its forgetting within the budget."""
    toward: list[str]
    """Directions (SearchBox.outside's words) of its best point beyond the box, when that point gains materially
    more than its best inside; empty otherwise."""


class Lattice:
    """The ensemble's laws (without their discrepancy) and unit draws of it, at every lattice point."""

    def __init__(self, ensemble: Sequence[Discrepant], target: TargetScale, box: SearchBox, budget: float) -> None:
        log_lr, share = lattice_points(box)
        lr = np.exp(log_lr)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            where = (target.parameters, lr, target.time, share)
            self._forgetting = np.array([member.law.forgetting(*where) for member in ensemble])
            self._gain = np.array([member.law.domain_gain(*where) for member in ensemble])
        self._bends = np.array([member.forgetting_bend(lr, share) for member in ensemble])
        self._points = (log_lr, share)
        self._box, self._budget = box, budget
        self._inside = box.holds(log_lr, share)

    def reach(self, forgetting_sd: float) -> float:
        """The largest P(forgetting <= budget) inside the searched box, each law times exp(forgetting_sd x its unit
        draw)."""
        with np.errstate(over="ignore", invalid="ignore"):
            forgetting = np.nan_to_num(self._forgetting * np.exp(forgetting_sd * self._bends), nan=np.inf)
        return float(np.max(np.mean(forgetting[:, self._inside] <= self._budget, axis=0)))

    def beyond(self, noise: float, relative: float, margin: float = 1.0) -> list[Beyond]:
        """Each law's verdict: whether its best point beyond the box that keeps the budget with forgetting times
        `margin` gains more than MATERIAL x sqrt(noise^2 + (relative x its best such gain inside)^2) over its best
        such point inside (and which way it lies): `noise` the replicates' sd of domain_gain, `relative` the form's
        error in it at the target, `margin` the factor the form's error in forgetting reaches at the rule's
        probability (as the answer's own point must keep the budget with it, so must a point that would move the
        answer: law_truths' bending size, whose rungs level off, had power-form refits forget 2.9 times too little
        at the target and 14 of 40 of them put a share beyond the box that only that shortfall let keep the
        budget). Whether it keeps the budget anywhere is its law's own say, and so is the comparison when no point
        inside keeps it with the margin: an error that large says nothing of which side of the box is better (the
        misfit ladder of tests/sweep/law/test_law_predict.py at 7.4e8, a margin of 19, had 16 of 20 refits find
        nothing inside and "extend the space" below the box)."""
        log_lr, share = self._points
        inside = self._inside
        verdicts = []
        for gain, forgetting in zip(self._gain, self._forgetting):
            kept = np.nan_to_num(forgetting, nan=np.inf)
            if not np.any(np.isfinite(gain) & (kept <= self._budget)):
                verdicts.append(Beyond(feasible=False, toward=[]))
                continue
            feasible = np.isfinite(gain) & (kept * margin <= self._budget)
            if not np.any(feasible & inside):  # an error too large for any point inside: the law's own contour
                feasible = np.isfinite(gain) & (kept <= self._budget)
            best_in = np.max(gain[feasible & inside], initial=-np.inf)
            material = MATERIAL * math.hypot(noise, relative * max(float(best_in), 0.0))
            outside = np.flatnonzero(feasible & ~inside)
            toward = []
            if len(outside):
                best = outside[int(np.argmax(gain[outside]))]
                if gain[best] > best_in + material:
                    toward = self._box.outside(math.exp(log_lr[best]), float(share[best]))
            verdicts.append(Beyond(feasible=True, toward=toward))
        return verdicts
