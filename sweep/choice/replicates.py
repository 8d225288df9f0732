"""Seed replicates: once the planned trials have finished, the best points run again with other seeds.

Their spread is the sweep's own noise: two trials closer than it cannot be told apart. The searcher
(sweep.run.searcher.enqueue_replicates) enqueues them in the study as WAITING trials (as the grid's
points are), each with its seed and the trial it replicates, so they survive a killed driver and a
rerun enqueues only those missing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from optuna.trial import FrozenTrial

from sweep.choice.feasible import Score, least_forgetting_first, ranked_feasible, ranked_infeasible
from sweep.study.config import ReplicatesConfig
from sweep.study.record import Attr, Status, status_of
from train_entry.config import SEED_LIMIT


@dataclass(frozen=True)
class Replicate:
    of: int
    """The number of the trial whose point is re-run."""
    params: dict[str, Any]
    seed: int


def is_replicate(frozen: FrozenTrial) -> bool:
    return Attr.REPLICATE_OF.value in frozen.user_attrs


def replicates_due(main: list[FrozenTrial], config: ReplicatesConfig, *, budget: float, seed: int) -> list[Replicate]:
    """Every replicate of the sweep, given its finished main trials (a pure function of them, so a
    rerun computes the same list): `config.trials` of them, point by point, at the seeds after `seed`."""
    points = _ranked_points(main, budget)[: config.top]
    if not points:
        return []
    return [
        Replicate(
            of=points[k % len(points)].number,
            params=dict(points[k % len(points)].params),
            seed=(seed + 1 + k // len(points)) % SEED_LIMIT,
        )
        for k in range(config.trials)
    ]


def _ranked_points(main: list[FrozenTrial], budget: float) -> list[FrozenTrial]:
    """One trial per distinct point, best first under the rule (sweep/choice/feasible.py): the feasible
    completed trials, then the other completed ones by final forgetting; with none completed, the rest
    by their last forgetting."""
    completed = [t for t in main if status_of(t) is Status.COMPLETED]
    ranked = ranked_feasible(completed, budget, _score) + ranked_infeasible(completed, budget, _score)
    if not ranked:
        ranked = sorted(main, key=lambda t: least_forgetting_first(_score(t)))
    distinct: dict[tuple, FrozenTrial] = {}
    for trial in ranked:
        if trial.params:
            distinct.setdefault(tuple(sorted(trial.params.items())), trial)
    return list(distinct.values())


def _score(frozen: FrozenTrial) -> Score:
    """The trial's figures on the pool (its latest interim evaluation before it has them), as the rule reads them;
    a missing gain ranks last."""
    return Score(_last(frozen, "domain_gain", missing=-math.inf), _last(frozen, "forgetting"), frozen.number)


def _last(frozen: FrozenTrial, metric: str, *, missing: float = math.inf) -> float:
    """A metric of the trial's figures, else of its latest evaluation; `missing` when it has none or it is not
    finite."""
    measured = frozen.user_attrs.get(Attr.FIGURES.value) or frozen.user_attrs.get(Attr.LAST.value) or {}
    value = measured.get(metric)
    return value if value is not None and math.isfinite(value) else missing
