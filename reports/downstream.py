"""Downstream scores where losses are shown: a terminal table of each trial's score and drop per task, the report's
cell of them, and its plot of each task's drop against forgetting beside the trade-off (evaluation.downstream)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")  # before pyplot: a report is written on machines without a display

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from rich import box
from rich.table import Table

from sweep.study.record import Status
from sweep.study.row import TrialRow
from train_entry.downstream.scores import TaskDrop


def tasks_of(rows: Sequence[TrialRow]) -> list[str]:
    """The downstream tasks any row was scored on, by name."""
    return sorted({task for row in rows for task in row.downstream or {}})


def score_cell(task: TaskDrop | None) -> str:
    """ "0.450 ± 0.079, drop +0.025 ± 0.012": a trial's score on one task with its standard error, and its drop from
    the base's with the drop's paired error."""
    if task is None:
        return ""
    cell = f"{task.score:.3f}" + (f" ± {task.stderr:.3f}" if task.stderr is not None else "")
    if task.drop is not None:
        cell += f", drop {task.drop:+.3f}" + (f" ± {task.drop_error:.3f}" if task.drop_error is not None else "")
    return cell


def downstream_table(rows: Sequence[TrialRow], budget: Mapping[str, float]) -> Table | None:
    """Each scored trial's score and drop per task, with its evaluation's seconds; None when no trial was scored."""
    tasks = tasks_of(rows)
    if not tasks:
        return None
    limits = "; ".join(f"{task} drop at most {limit:g}" for task, limit in sorted(budget.items()))
    table = Table(
        title="downstream scores (score ± its standard error, drop from the base's ± the paired error)",
        caption=f"budget: {limits}" if limits else None,
        header_style="bold",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
    )
    table.add_column("#", justify="right", no_wrap=True)
    for task in tasks:
        table.add_column(task, justify="right", no_wrap=True)
    table.add_column("eval s", justify="right", no_wrap=True)
    for row in rows:
        if row.downstream:
            seconds = "" if row.downstream_seconds is None else f"{row.downstream_seconds:.0f}"
            table.add_row(str(row.number), *(score_cell(row.downstream.get(task)) for task in tasks), seconds)
    return table


def drop_figure(rows: Sequence[TrialRow], forgetting_budget: float, budget: Mapping[str, float]) -> Figure:
    """Each task's drop against forgetting, one panel per task: the completed trials on the pool with the drop's
    paired error, the forgetting budget (vertical) and the task's budget (horizontal) dashed."""
    tasks = tasks_of(rows)
    figure, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 4.6), layout="constrained", squeeze=False)
    for ax, task in zip(axes[0], tasks):
        scored = [
            row for row in rows
            if row.status is Status.COMPLETED and row.on_pool and row.forgetting is not None and row.drop(task) is not None
        ]  # fmt: skip
        errors = [(row.downstream[task].drop_error or 0.0) for row in scored]
        ax.errorbar(
            [row.forgetting for row in scored], [row.drop(task) for row in scored], yerr=errors, fmt="o",
            color="#2b6cb0", ecolor="#a0aec0", capsize=2,
        )  # fmt: skip
        for row in scored:
            ax.annotate(str(row.number), (row.forgetting, row.drop(task)), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")  # fmt: skip
        ax.axvline(forgetting_budget, linestyle="--", color="#c53030", label=f"forgetting budget {forgetting_budget:g}")
        if task in budget:
            ax.axhline(budget[task], linestyle="--", color="#805ad5", label=f"drop budget {budget[task]:g}")
        ax.axhline(0.0, color="#718096", linewidth=0.8)
        ax.set_xlabel("forgetting")
        ax.set_ylabel(f"{task} drop (base's score − trial's)")
        ax.set_title(task)
        ax.legend(fontsize=8, loc="best")
    return figure
