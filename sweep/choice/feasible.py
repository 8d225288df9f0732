"""The feasibility-and-ranking rule, written once: every caller that orders trials by how good they are uses it.

Feasible: forgetting <= the forgetting budget (a constraint, not a second goal). Among feasible trials the
ranking is by final domain_gain, highest first; a tie on domain_gain goes to the one that forgot less, and
a tie on both to the earlier trial (lower number), so the order is total and never depends on input order.
Infeasible trials are ranked by forgetting, least first (a tie to the higher domain_gain, then the earlier
trial): the least-forgetting one is the closest to becoming feasible.

A leaf: it knows only numbers, so the choice (TrialRow), the replicates (Optuna's FrozenTrial) and the
reports all rank through it, each saying how to read a score off its own type.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import NamedTuple, TypeVar

Item = TypeVar("Item")


class Score(NamedTuple):
    domain_gain: float
    forgetting: float
    number: int
    """The trial's number: the last tie-break, the earlier trial first."""


def is_feasible(forgetting: float | None, budget: float) -> bool:
    """Within the forgetting budget; a missing or non-finite forgetting never is."""
    return forgetting is not None and math.isfinite(forgetting) and forgetting <= budget


def feasible_first(score: Score) -> tuple[float, float, int]:
    """The sort key among feasible trials: highest domain_gain, then least forgetting, then earliest."""
    return (-score.domain_gain, score.forgetting, score.number)


def least_forgetting_first(score: Score) -> tuple[float, float, int]:
    """The sort key among infeasible trials: least forgetting, then highest domain_gain, then earliest."""
    return (score.forgetting, -score.domain_gain, score.number)


def ranked_feasible(items: Iterable[Item], budget: float, score: Callable[[Item], Score]) -> list[Item]:
    """The feasible items, best first under the rule."""
    scored = [(score(item), item) for item in items]
    kept = [(s, item) for s, item in scored if is_feasible(s.forgetting, budget)]
    return [item for _, item in sorted(kept, key=lambda pair: feasible_first(pair[0]))]


def ranked_infeasible(items: Iterable[Item], budget: float, score: Callable[[Item], Score]) -> list[Item]:
    """The items outside the budget, least forgetting first."""
    scored = [(score(item), item) for item in items]
    kept = [(s, item) for s, item in scored if not is_feasible(s.forgetting, budget)]
    return [item for _, item in sorted(kept, key=lambda pair: least_forgetting_first(pair[0]))]
