"""The second budget: objective.downstream_budget, per downstream task the largest drop from the base's score
accepted. The pick applies it as it applies the forgetting budget, by a chance constraint on the surrogate: a
candidate qualifies when P(a re-run is within every budget) >= objective.pick.min_probability. Each task's drop gets
a GP of its own over the searched box (sweep.choice.surrogate.fit_metric), and the joint probability is the product
of the forgetting's and each drop's: exact if they were independent, and below the true joint probability when
forgetting and drops rise together (for positively correlated normals P(A and B) >= P(A) P(B)), so the product
errs towards refusing. A re-run is scored on the same task examples as the trials the GP was fitted to, so its
drop's example error is counted once (the fitted trials' paired drop errors, pooled), not twice as a fresh
validation draw's is. A confirmation holds only where its trials' mean drop is within each task's budget too."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sweep.choice.surrogate import MetricSurface, Predictions, fit_metric
from sweep.space import SearchSpace
from sweep.study.row import TrialRow

FORGETTING = "the forgetting budget"


def budget_name(task: str) -> str:
    """How a sentence names a task's budget."""
    return f"the {task} downstream budget"


@dataclass(frozen=True)
class DropSurfaces:
    """A GP of each budgeted task's drop; a task with too few scored points has none and no candidate can show it is
    within its budget."""

    downstream_budget: Mapping[str, float]
    surfaces: Mapping[str, MetricSurface | None]

    @classmethod
    def fit(cls, rows: Sequence[TrialRow], space: SearchSpace, budget: Mapping[str, float]) -> DropSurfaces:
        surfaces = {
            task: fit_metric(rows, space, lambda row, task=task: row.drop(task), lambda row, task=task: _error(row, task))
            for task in budget
        }
        return cls(downstream_budget=budget, surfaces=surfaces)

    def predict(self, lr_fraction: Sequence[float], domain_share: Sequence[float]) -> dict[str, Predictions | None]:
        return {task: s.predict(lr_fraction, domain_share) if s else None for task, s in self.surfaces.items()}

    def probabilities(self, lr_fraction: Sequence[float], domain_share: Sequence[float]) -> dict[str, np.ndarray]:
        """P(a re-run's drop <= the task's budget) at each point, per task (0 where the task has no surface)."""
        return {
            task: (
                prediction.probability_at_most(self.downstream_budget[task], text_sd=0.0)
                if prediction is not None
                else np.zeros(len(lr_fraction))
            )
            for task, prediction in self.predict(lr_fraction, domain_share).items()
        }


def _error(row: TrialRow, task: str) -> float | None:
    measured = (row.downstream or {}).get(task)
    return measured.drop_error if measured is not None else None


def binding(
    forgetting: np.ndarray, drops: Mapping[str, np.ndarray], above: np.ndarray, threshold: float
) -> dict[str, int]:
    """Of the candidates `above` the pick (a higher lower-confidence gain), how many each budget held back: a
    candidate counts for every budget whose own probability is below the threshold, or, when each passes alone and
    only their product fails, for the one with the lowest probability."""
    names = [FORGETTING, *(budget_name(task) for task in drops)]
    probabilities = np.vstack([forgetting, *drops.values()]) if drops else forgetting[None, :]
    held = dict.fromkeys(names, 0)
    for column in np.flatnonzero(above):
        below = [name for name, p in zip(names, probabilities[:, column]) if p < threshold]
        for name in below or [names[int(np.argmin(probabilities[:, column]))]]:
            held[name] += 1
    return {name: count for name, count in held.items() if count}


def held_back_by(
    forgetting: np.ndarray, drops: Mapping[str, np.ndarray], above: np.ndarray, threshold: float, *, any_eligible: bool
) -> str:
    """The pick's "bound by ..." clause: which budgets held back the candidates `above` it (all of them when none
    qualified, `any_eligible` False)."""
    ranked = "with a higher lower-confidence domain_gain" if any_eligible else "of the grid"
    return bound_sentence(binding(forgetting, drops, above, threshold), ranked)


def bound_sentence(held: Mapping[str, int], ranked: str) -> str:
    """Which budget bound the pick, from `binding`'s counts of candidates `ranked` ("with a higher lower-confidence
    domain_gain", or "of the grid" when none qualified) each held back."""
    if not held:
        return f"no budget bound it (no candidate {ranked} was held back)"
    parts = [f"{name} ({count} candidate(s) {ranked} held back)" for name, count in
             sorted(held.items(), key=lambda item: -item[1])]  # fmt: skip
    return "bound by " + " and ".join(parts)
