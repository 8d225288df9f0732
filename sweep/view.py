"""How a sweep is shown: the trials table, a one-line progress summary and the outcome.

Shared by the live view, the end of `sweep run` and `sweep status`, so all three read alike.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter

from rich.console import Console
from rich.table import Table

from sweep.record import Status
from sweep.select import Selection
from sweep.study import SweepPlan
from sweep.table import TrialRow

_STYLE = {
    Status.COMPLETED: "green",
    Status.PRUNED: "yellow",
    Status.DIVERGED: "magenta",
    Status.FAILED: "red",
    Status.RUNNING: "cyan",
    Status.WAITING: "dim",
}


def trials_table(rows: list[TrialRow], *, optimum: TrialRow | None = None, title: str | None = None) -> Table:
    table = Table(title=title, header_style="bold")
    for column in ("#", "status", "lr_fraction", "peak LR", "mix", "domain_gain", "forgetting", "steps", "wall s"):
        table.add_column(column, justify="left" if column in ("status", "mix") else "right", no_wrap=True)
    # The reason alone gives way on a narrow terminal: one row per trial keeps the table readable.
    table.add_column("reason", no_wrap=True, overflow="ellipsis")
    for row in rows:
        mark = " *" if optimum is not None and row.number == optimum.number else ""
        table.add_row(
            f"{row.number}{mark}",
            f"[{_STYLE[row.status]}]{row.status.value}[/]",
            f"{row.lr_fraction:.4g}",
            f"{row.peak_lr:.3g}",
            row.mix,
            _number(row.domain_gain),
            _number(row.forgetting),
            "" if row.steps is None else str(row.steps),
            "" if row.wall_seconds is None else f"{row.wall_seconds:.0f}",
            row.reason or "",
        )
    return table


def progress_line(rows: list[TrialRow], plan: SweepPlan, *, best: TrialRow | None, concurrency: int) -> str:
    """done / pruned / running / failed, the best feasible trial so far and an ETA."""
    counts = Counter(row.status for row in rows)
    finished = [row for row in rows if row.finished]
    parts = [
        f"{len(finished)}/{plan.planned_trials} done",
        f"{counts[Status.COMPLETED]} completed",
        f"{counts[Status.PRUNED]} pruned",
        f"{counts[Status.DIVERGED]} diverged",
        f"{counts[Status.FAILED]} failed",
        f"{counts[Status.RUNNING]} running",
    ]
    if best is not None:
        parts.append(f"best so far: trial {best.number} gain {best.domain_gain:.4f} forgetting {best.forgetting:.4f}")
    eta = _eta_seconds(finished, plan.planned_trials - len(finished), concurrency)
    if eta is not None:
        parts.append(f"ETA {_duration(eta)}")
    return " | ".join(parts)


def print_outcome(console: Console, selection: Selection, rows: list[TrialRow], *, title: str) -> None:
    console.print(trials_table(rows, optimum=selection.optimum, title=title))
    console.print(selection.verdict, style="bold" if selection.optimum else "bold red")
    for note in selection.boundary:
        console.print(f"warning: the optimum sits on the edge of the search: {note}", style="yellow")


def _eta_seconds(finished: list[TrialRow], remaining: int, concurrency: int) -> float | None:
    walls = [row.wall_seconds for row in finished if row.wall_seconds is not None]
    if not walls or remaining <= 0:
        return None
    return statistics.fmean(walls) * math.ceil(remaining / concurrency)


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"
