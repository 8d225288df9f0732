"""Terminal tables of a trial's evaluations and of a base's manifest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from reports.console import make_console
from train_entry.data.corpus import CorpusStats
from train_entry.trial_config import Metrics, TrialResult


def metrics_table(history: Sequence[Metrics], *, title: str) -> Table:
    table = Table(title=title)
    for column in ("step", "tokens", "train loss", "domain loss", "general loss", "domain_gain", "forgetting"):
        table.add_column(column, justify="right")
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
        console.print(f"domain_gain = {result.final.domain_gain:+.4f}   forgetting = {result.final.forgetting:+.4f}")


def print_corpora(stats: Mapping[str, CorpusStats], console: Console | None = None) -> None:
    """Documents and tokens per corpus file, and what reading it skipped (never silently)."""
    table = Table(title="corpora")
    columns = ("corpus", "documents", "tokens", "not UTF-8", "malformed", "empty", "oversized")
    for column in columns:
        table.add_column(column, justify="left" if column == "corpus" else "right")
    for name, s in stats.items():
        skipped = (s.skipped_non_utf8, s.skipped_malformed, s.skipped_empty, s.skipped_oversized)
        table.add_row(name, f"{s.documents:,}", f"{s.tokens:,}", *(f"{n:,}" if n else "" for n in skipped))
    (console or make_console()).print(table)


def print_manifest(manifest: Mapping[str, Any], console: Console | None = None) -> None:
    table = Table(title="base", show_header=False)
    table.add_column("key")
    table.add_column("value")
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
