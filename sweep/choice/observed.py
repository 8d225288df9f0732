"""The best observed trial of the search trials that ran the whole budget, with the Pareto front around it.

Best observed trial: the first COMPLETED search trial under the feasibility-and-ranking rule
(sweep/choice/feasible.py). Pruned, diverged and failed trials never qualify: a curve cut short says nothing about
where it would have ended. Only the search's trials are compared, all measured on one text, the validation pool: a
confirmation trial is measured on a draw of its own (another text, whose offset would pass for a better point), and
a replicate re-runs a point already in the search; both are shown in their own rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sweep.choice.feasible import is_feasible
from sweep.choice.feasible import Score, least_forgetting_first, ranked_feasible
from sweep.space import SearchSpace
from sweep.study.record import Status
from sweep.study.row import Role, TrialRow
from train_entry.mix import MixRatio


@dataclass(frozen=True)
class Selection:
    best_observed: TrialRow | None
    """None when no completed trial is within the forgetting budget."""
    pareto: list[TrialRow]
    """Completed search trials no other completed search trial beats on both domain_gain and forgetting (all on the
    pool), by rising forgetting."""
    least_forgetting: TrialRow | None
    """When nothing is feasible: the Pareto trial closest to the budget, the one to look at."""
    boundary: list[str]
    """Notes on each searched bound the best observed trial sits on: the range should be widened there."""
    forgetting_budget: float
    downstream_budget: Mapping[str, float] = field(default_factory=dict)
    """Per downstream task, the largest drop accepted; the best observed trial is within it too."""

    @property
    def verdict(self) -> str:
        """One plain sentence on the outcome."""
        if self.best_observed is not None:
            best = self.best_observed
            return (
                f"best observed trial: {best.number}, lr_fraction {best.lr_fraction:.4g} (peak LR {best.peak_lr:.3g}), "
                f"mix {best.mix}: domain_gain {best.domain_gain:.4f}, forgetting {best.forgetting:.4f} "
                f"(budget {self.forgetting_budget:.4g})"
                + "".join(
                    f", {task} drop {best.drop(task):+.4f} (budget {limit:.4g})"
                    for task, limit in sorted(self.downstream_budget.items())
                )
            )
        if self.least_forgetting is None:
            return "no trial completed its full budget, so there is no best observed trial"
        least = self.least_forgetting
        downstream = "".join(
            f" and the {task} downstream budget {limit:.4g}" for task, limit in sorted(self.downstream_budget.items())
        )
        return (
            f"no completed trial is within the forgetting budget {self.forgetting_budget:.4g}{downstream}; "
            f"the least-forgetting Pareto trial is {least.number} (lr_fraction {least.lr_fraction:.4g}, "
            f"mix {least.mix}: forgetting {least.forgetting:.4f}, domain_gain {least.domain_gain:.4f})"
        )


def within_downstream(row: TrialRow, budget: Mapping[str, float]) -> bool:
    """Every budgeted task's drop measured and within its budget (objective.downstream_budget; a row without one never
    is)."""
    return all(is_feasible(row.drop(task), limit) for task, limit in budget.items())


def select(
    rows: list[TrialRow], *, forgetting_budget: float, space: SearchSpace,
    downstream_budget: Mapping[str, float] | None = None,
) -> Selection:  # fmt: skip
    completed = _completed(rows)
    pareto = sorted(_pareto_front(completed), key=lambda row: least_forgetting_first(score(row)))
    best = best_observed(rows, forgetting_budget, downstream_budget)
    boundary = (
        space.edges(best.lr_fraction, MixRatio.from_domain_share(best.domain_share), shown_mix=best.mix) if best else []
    )
    return Selection(
        best_observed=best,
        pareto=pareto,
        least_forgetting=pareto[0] if best is None and pareto else None,
        boundary=boundary,
        forgetting_budget=forgetting_budget,
        downstream_budget=downstream_budget or {},
    )


def best_observed(
    rows: list[TrialRow], forgetting_budget: float, downstream_budget: Mapping[str, float] | None = None
) -> TrialRow | None:
    """The best observed trial alone: the first of ranked_completed."""
    return next(iter(ranked_completed(rows, forgetting_budget, downstream_budget)), None)


def ranked_completed(
    rows: list[TrialRow], forgetting_budget: float, downstream_budget: Mapping[str, float] | None = None
) -> list[TrialRow]:
    """The feasible completed search trials, best first (sweep/choice/feasible.py): the best observed trial, its
    runner-up...; with a downstream budget, only those whose every budgeted drop is within it too."""
    completed = [row for row in _completed(rows) if within_downstream(row, downstream_budget or {})]
    return ranked_feasible(completed, forgetting_budget, score)


def score(row: TrialRow) -> Score:
    """A completed row's final metrics, as the rule reads them."""
    return Score(row.domain_gain, row.forgetting, row.number)


def _completed(rows: list[TrialRow]) -> list[TrialRow]:
    """The completed search trials measured on the pool: the ones compared with each other."""
    return [
        row
        for row in rows
        if row.status is Status.COMPLETED
        and row.role is Role.SEARCH
        and row.on_pool
        and row.domain_gain is not None
        and row.forgetting is not None
    ]


def _pareto_front(rows: list[TrialRow]) -> list[TrialRow]:
    return [row for row in rows if not any(_dominates(other, row) for other in rows)]


def _dominates(a: TrialRow, b: TrialRow) -> bool:
    no_worse = a.domain_gain >= b.domain_gain and a.forgetting <= b.forgetting
    better = a.domain_gain > b.domain_gain or a.forgetting < b.forgetting
    return no_worse and better
