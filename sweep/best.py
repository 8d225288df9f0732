"""best.json: the optimum, the evidence for it, the Pareto front and what the sweep cost."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from sweep.files import write_json
from sweep.record import Status
from sweep.select import Selection
from sweep.study import SweepPlan
from sweep.table import TrialRow, row_dict

BEST_JSON = "best.json"


@dataclasses.dataclass(frozen=True)
class Cost:
    tokens_used: int
    """Tokens read by every trial of the sweep, pruned ones included."""
    tokens_saved_by_pruning: int
    """Tokens the pruned trials would still have read had each run the whole budget."""
    full_trial_tokens: int

    @classmethod
    def of(cls, rows: list[TrialRow], plan: SweepPlan) -> Cost:
        return cls(
            tokens_used=sum(row.tokens_seen or 0 for row in rows),
            tokens_saved_by_pruning=sum(
                plan.full_trial_tokens - (row.tokens_seen or 0) for row in rows if row.status is Status.PRUNED
            ),
            full_trial_tokens=plan.full_trial_tokens,
        )


def best_summary(selection: Selection, rows: list[TrialRow], plan: SweepPlan) -> dict[str, Any]:
    counts = {status.value: sum(row.status is status for row in rows) for status in Status}
    feasible = sorted(
        (
            row
            for row in rows
            if row.status is Status.COMPLETED
            and row.forgetting is not None
            and row.forgetting <= plan.forgetting_budget
        ),
        key=lambda row: -row.domain_gain,
    )
    return {
        "verdict": selection.verdict,
        "optimum": _row(selection.optimum),
        "least_forgetting": _row(selection.least_forgetting),
        "boundary_warnings": selection.boundary,
        "evidence": {
            "forgetting_budget": plan.forgetting_budget,
            "trials": counts,
            "feasible_completed": len(feasible),
            # The runner-up's distance is how clear the choice is.
            "runner_up": _row(feasible[1]) if len(feasible) > 1 else None,
        },
        "pareto_front": [_row(row) for row in selection.pareto],
        "cost": dataclasses.asdict(Cost.of(rows, plan)),
    }


def write_best(summary: dict[str, Any], run_dir: Path) -> None:
    write_json(run_dir / BEST_JSON, summary)


def _row(row: TrialRow | None) -> dict[str, Any] | None:
    return None if row is None else row_dict(row)
