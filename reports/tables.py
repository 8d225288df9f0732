"""Terminal tables: a sweep's trials with a one-line progress summary and its outcome, a trial's
evaluations, a base's manifest and its corpora.

Shared by the live view, the end of `sweep run`, `sweep status`, `sweep trial` and `sweep base`,
so they all read alike.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from reports.console import make_console
from reports.decision import decision_lines
from reports.downstream import downstream_table
from sweep.choice.best import BestSummary
from sweep.choice.observed import Selection
from sweep.choice.points import PointSummary, point_summaries, seed_noises
from sweep.run.progress import byte_size
from sweep.study.record import Status
from sweep.study.row import Role, TrialRow
from train_entry.data.corpus import CorpusStats
from train_entry.data.draws import text_words
from train_entry.trial_config import Metrics, TrialResult


def metrics_table(history: Sequence[Metrics], *, title: str) -> Table:
    """A trial's evaluations, one row each, its cells whole in an 80-column terminal up to a billion tokens."""
    table = Table(
        title=title,
        caption="loss: train on the step's batch, domain and general on the held-out text",
        collapse_padding=True,
        header_style="bold",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for column in ("step", "tokens", "loss: train", "domain", "general", "domain_gain", "forgetting"):
        table.add_column(column, justify="right", no_wrap=True)
    for m in history:
        table.add_row(
            str(m.step),
            f"{m.tokens_seen:,}",
            f"{m.train_loss:.4f}",
            f"{m.domain_loss:.4f}",
            f"{m.general_loss:.4f}",
            f"{m.domain_gain:+.4f}",
            f"{m.forgetting:+.4f}",
        )
    return table


def print_trial(result: TrialResult, *, title: str, console: Console | None = None) -> None:
    console = console or make_console()
    console.print(metrics_table(result.history, title=title))
    line = f"status: {result.status.value}"
    if result.reason:
        line += f" ({result.reason})"
    line += f"   steps: {result.steps}   tokens: {result.tokens_seen:,}   wall: {result.wall_seconds:.1f} s"
    console.print(line)
    if result.final is not None:
        console.print(
            f"on the interim windows: domain_gain = {result.final.domain_gain:+.4f}   "
            f"forgetting = {result.final.forgetting:+.4f}"
        )
    figures = result.figures
    if figures is not None:
        console.print(
            f"on {text_words(figures.text)} (all of it, at step {figures.step}): domain_gain = {figures.domain_gain:+.4f}"
            f"   forgetting = {figures.forgetting:+.4f}"
        )
    if figures is not None and figures.text_error is not None:
        error = figures.text_error
        console.print(
            f"on another text of its kind and size these would move by about ± {error.domain_gain:.4f} and "
            f"± {error.forgetting:.4f} (one standard error over its {error.documents['domain']} domain and "
            f"{error.documents['general']} general documents)"
        )


def print_corpora(stats: Mapping[str, CorpusStats], console: Console | None = None) -> None:
    """Documents and tokens per corpus split, how much of the corpus its sample covers, and what reading it skipped
    (never silently). Five columns, the figures never cut: it reads whole in an 80-column terminal."""
    table = Table(title="corpora", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("corpus", "documents", "tokens", "sample of corpus"):
        table.add_column(column, justify="left" if column == "corpus" else "right", no_wrap=True)
    table.add_column("skipped", overflow="fold")
    for name, s in stats.items():
        table.add_row(name, f"{s.documents:,}", f"{s.tokens:,}", _coverage(s), _skipped(s))
    (console or make_console()).print(table)


def _skipped(stats: CorpusStats) -> str:
    """ "3 not UTF-8, 1 empty": the documents reading skipped, by reason; empty when none was."""
    counts = (
        (stats.skipped_non_utf8, "not UTF-8"),
        (stats.skipped_malformed, "malformed"),
        (stats.skipped_empty, "empty"),
        (stats.skipped_oversized, "oversized"),
    )
    return ", ".join(f"{count:,} {reason}" for count, reason in counts if count)


def _coverage(stats: CorpusStats) -> str:
    """ "whole" or the share of the corpus's stored bytes the sample read, and the corpus's size."""
    if stats.sampled_bytes >= stats.corpus_bytes:
        return "whole"
    return f"{stats.share * 100:.2g}% of {byte_size(stats.corpus_bytes)}"


def print_manifest(manifest: Mapping[str, Any], console: Console | None = None) -> None:
    table = Table(title="base", show_header=False)
    table.add_column("key", no_wrap=True)
    table.add_column("value", overflow="fold")  # a path or a hash wraps whole instead of ending in "…"
    for key, value in flat_items(manifest):
        table.add_row(key, value)
    (console or make_console()).print(table)


def flat_items(mapping: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """("a.b", "value") pairs of a nested mapping, numbers shown to 6 significant digits."""
    rows = []
    for key, value in mapping.items():
        if isinstance(value, Mapping):
            rows.extend(flat_items(value, f"{prefix}{key}."))
        else:
            rows.append((f"{prefix}{key}", f"{value:.6g}" if isinstance(value, float) else str(value)))
    return rows


_STYLE = {
    Status.COMPLETED: "green",
    Status.PRUNED: "yellow",
    Status.DIVERGED: "magenta",
    Status.FAILED: "red",
    Status.RUNNING: "cyan",
    Status.WAITING: "dim",
}


COLUMNS = (
    "#", "status", "lr_fraction", "peak LR", "mix", "seed", "domain_gain", "forgetting", "text", "steps", "wall s",
)  # fmt: skip
OPTIONAL = ("wall s", "peak LR", "seed", "steps")
"""Dropped in this order, one by one, while the table is wider than the terminal: what is left (number, status,
point, metrics and the text they were measured on) is never cut. peak LR is lr_fraction x the base's max_lr; the
rest is in trials.csv."""
UNBOUNDED_WIDTH = 10_000
"""Wider than any table: the width a table is measured at to find its own."""


def trials_table(
    rows: list[TrialRow], *, best: TrialRow | None = None, pick_trials: Collection[int] = (), title: str | None = None,
    downstream_budget: Mapping[str, float] | None = None,
) -> TrialsTable:  # fmt: skip
    return TrialsTable(rows, best=best, pick_trials=pick_trials, title=title, downstream_budget=downstream_budget)


PICK_MARK = "◆"
"""Beside the number of each trial at the pick's point (its confirmation trials, replicates, search trial)."""
BEST_MARK = "*"
"""Beside the best observed trial's number: evidence, one run at one seed."""


class TrialsTable:
    """The trials, one row each, laid out for the width it is printed at (a terminal's, or a log's).

    Every cell is shown whole: rather than let rich shrink every column of a table too wide for the terminal
    (a long pruning reason once left number, status and mix as "…" even at 100 columns), the optional
    columns go, and each trial's role and reasons (replicate, confirmation, pruning, guard) are listed below the
    table, wrapped, one line per trial that has one, after a key to the marks.
    """

    def __init__(
        self, rows: list[TrialRow], *, best: TrialRow | None, pick_trials: Collection[int], title: str | None,
        downstream_budget: Mapping[str, float] | None = None,
    ) -> None:  # fmt: skip
        self.rows, self.best, self.pick_trials, self.title = rows, best, frozenset(pick_trials), title
        self.downstream_budget = downstream_budget or {}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        cells = [_trial_cells(row, self.best, self.pick_trials) for row in self.rows]
        shown = list(COLUMNS)
        table = self._table(shown, cells)
        # Measured at a width nothing reaches: Measurement.get clamps what it measures to the width it is given, so
        # at the terminal's own width every table would seem to fit, and one too wide would be cropped at its edge.
        unbounded = options.update_width(UNBOUNDED_WIDTH)
        for column in OPTIONAL:
            if Measurement.get(console, unbounded, table).maximum <= options.max_width:
                break
            shown.remove(column)
            table = self._table(shown, cells)
        yield table
        key = _marks_key(self.rows, self.best, self.pick_trials)
        if key:
            yield Padding(Text(key, overflow="fold"), (0, 0, 0, 2))
        for row in self.rows:
            reason = row_notes(row)
            if reason:
                yield Padding(Text(f"#{row.number}: {reason}", overflow="fold"), (0, 0, 0, 2))
        scores = downstream_table(self.rows, self.downstream_budget)
        if scores is not None:
            yield scores

    def _table(self, shown: list[str], cells: list[tuple[str, ...]]) -> Table:
        # No vertical rules, one space of padding between columns: with both, the columns alone took 104
        # characters, more than a 100-column terminal.
        table = Table(title=self.title, header_style="bold", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
        keep = [k for k, column in enumerate(COLUMNS) if column in shown]
        for k in keep:
            width = max([len(COLUMNS[k]), *(len(row[k]) for row in cells)])
            justify = "left" if COLUMNS[k] in ("status", "mix", "text") else "right"
            table.add_column(COLUMNS[k], justify=justify, no_wrap=True, min_width=width)
        for row, values in zip(self.rows, cells):
            styled = [f"[{_STYLE[row.status]}]{values[k]}[/]" if COLUMNS[k] == "status" else values[k] for k in keep]
            table.add_row(*styled, style="bold" if row.number in self.pick_trials else None)
        return table


def _trial_cells(row: TrialRow, best: TrialRow | None, pick_trials: frozenset[int]) -> tuple[str, ...]:
    """A row's cells but the reason, as plain text."""
    marks = (PICK_MARK if row.number in pick_trials else "") + (
        BEST_MARK if best is not None and row.number == best.number else ""
    )
    return (
        f"{row.number} {marks}" if marks else str(row.number),
        row.status.value,
        f"{row.lr_fraction:.4g}",
        f"{row.peak_lr:.3g}",
        row.mix,
        "" if row.seed is None else str(row.seed),
        _number(row.domain_gain),
        _number(row.forgetting),
        row.text or "",
        "" if row.steps is None else str(row.steps),
        "" if row.wall_seconds is None else f"{row.wall_seconds:.0f}",
    )


def _marks_key(rows: list[TrialRow], best: TrialRow | None, pick_trials: frozenset[int]) -> str:
    """What the marks beside the numbers mean, for the marks the table shows."""
    shown = {row.number for row in rows}
    parts = []
    if pick_trials & shown:
        parts.append(f"{PICK_MARK} the pick's trials")
    if best is not None and best.number in shown:
        parts.append(f"{BEST_MARK} the best observed trial (one seed: evidence, not the pick)")
    return "; ".join(parts)


def row_notes(row: TrialRow) -> str:
    """A trial's role (when not a search trial) and why it stopped, as one line."""
    return "; ".join(filter(None, [role_words(row), row.reason]))


def role_words(row: TrialRow) -> str | None:
    """A replicate's or confirmation trial's role in words; None for a search trial."""
    if row.role is Role.REPLICATE:
        return f"replicate of trial {row.replicate_of} at seed {row.seed}"
    if row.role is Role.CONFIRMATION:
        return f"confirmation of candidate {row.confirms + 1} at fresh seed {row.seed}"
    return None


def points_table(points: list[PointSummary]) -> Table:
    """The points measured to the end more than once on one text: their mean and seed-to-seed spread there."""
    table = Table(title="points measured more than once on one text (completed trials)", header_style="bold")
    for column in ("lr_fraction", "mix", "text", "n", "trials", "domain_gain", "forgetting"):
        table.add_column(column, justify="left" if column in ("mix", "text", "trials") else "right", no_wrap=True)
    for point in points:
        table.add_row(
            f"{point.lr_fraction:.4g}",
            point.mix,
            point.text,
            str(point.n),
            ", ".join(map(str, point.trials)),
            _spread(point.domain_gain_mean, point.domain_gain_sd),
            _spread(point.forgetting_mean, point.forgetting_sd),
        )
    return table


def spread_lines(points: list[PointSummary]) -> list[str]:
    """The seed-to-seed spread on each text some point was measured twice on, never pooled across texts."""
    return [
        f"seed-to-seed spread on {text_words(noise.text)} (sd pooled over {noise.points} point(s), {noise.degrees_of_freedom} "
        f"degree(s) of freedom): domain_gain {noise.domain_gain_sd:.4f}, forgetting {noise.forgetting_sd:.4f}"
        for noise in seed_noises(points)
    ]


def _spread(mean: float, sd: float | None) -> str:
    return f"{mean:.4f}" if sd is None else f"{mean:.4f} ± {sd:.4f}"


def progress_line(rows: list[TrialRow], *, planned: int, best: TrialRow | None, concurrency: int) -> str:
    """done / pruned / running / failed, the best feasible trial so far and an ETA."""
    counts = Counter(row.status for row in rows)
    finished = [row for row in rows if row.finished]
    parts = [
        f"{len(finished)}/{planned} done",
        f"{counts[Status.COMPLETED]} completed",
        f"{counts[Status.PRUNED]} pruned",
        f"{counts[Status.DIVERGED]} diverged",
        f"{counts[Status.FAILED]} failed",
        f"{counts[Status.RUNNING]} running",
    ]
    if best is not None:
        parts.append(
            f"best observed so far: trial {best.number} gain {best.domain_gain:.4f} forgetting {best.forgetting:.4f}"
        )
    eta = _eta_seconds(finished, planned - len(finished), concurrency)
    if eta is not None:
        parts.append(f"ETA {_duration(eta)}")
    return " | ".join(parts)


def print_outcome(
    console: Console,
    selection: Selection,
    rows: list[TrialRow],
    *,
    title: str,
    summary: BestSummary | None = None,
    notes: Sequence[str] = (),
) -> None:
    """The trials (the pick's marked), the points measured more than once and their spread, `notes` (what a reader
    could not tell from the table), then the decision, headline first: the pick, its confirmation and why it is not
    the best observed trial (reports/decision.py), what the pick rests on, and last the best observed trial as the
    evidence it is."""
    pick_trials = summary.pick_trials if summary is not None else ()
    console.print(trials_table(
        rows, best=selection.best_observed, pick_trials=pick_trials, title=title,
        downstream_budget=selection.downstream_budget,
    ))  # fmt: skip
    points = point_summaries(rows)
    repeated = [point for point in points if point.n > 1]
    if repeated:
        console.print(points_table(repeated))
        for line in spread_lines(repeated):
            console.print(line, highlight=False)
    for note in notes:
        console.print(f"note: {note}", style="yellow", highlight=False)
    if summary is not None:
        first, *rest = decision_lines(summary)
        console.print(first, style="bold" if summary.pick.point is not None else "bold red", highlight=False)
        for line in rest:
            console.print(line, highlight=False)
        for note in summary.boundary_warnings:
            console.print(f"warning: {note}", style="yellow", highlight=False)
    console.print(f"evidence: {selection.verdict}", highlight=False)
    if summary is None:
        for note in selection.boundary:
            console.print(f"warning: the best observed trial sits on the edge of the search: {note}", style="yellow")


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
