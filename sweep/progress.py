"""Step progress for whatever a person waits on: a live bar on a terminal, a line per tenth in a log."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

OnStep = Callable[[int, float], None]
"""on_step(step, train_loss)."""


@contextlib.contextmanager
def step_progress(label: str, total: int, *, lazy: bool = False) -> Iterator[OnStep]:
    """Yields on_step; with lazy=True nothing is shown unless a step is reported (cache hits stay silent)."""
    console = Console(stderr=True)
    if not console.is_terminal:
        yield _log_lines(label, total)
        return
    progress = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]:.3f}"),
        TimeRemainingColumn(),
        console=console,
    )
    task = progress.add_task(label, total=total, loss=float("nan"))

    def on_step(step: int, loss: float) -> None:
        if not progress.live.is_started:
            progress.start()
        progress.update(task, completed=step, loss=loss)

    if not lazy:
        progress.start()
    try:
        yield on_step
    finally:
        progress.stop()


def _log_lines(label: str, total: int) -> OnStep:
    started = time.monotonic()
    every = max(1, total // 10)

    def on_step(step: int, loss: float) -> None:
        if step % every == 0 or step == total:
            elapsed = time.monotonic() - started
            print(f"{label}: step {step}/{total}  loss {loss:.3f}  {elapsed:.0f} s", file=sys.stderr, flush=True)

    return on_step
