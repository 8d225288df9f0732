"""Progress for whatever a person waits on (training steps, a corpus's sample): a live bar on a terminal, a line
per tenth in a log."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from train_entry.data.corpus import OnProgress, SampleProgress

OnStep = Callable[[int, float], None]
"""on_step(step, train_loss)."""


@contextlib.contextmanager
def step_progress(label: str, total: int, *, lazy: bool = False, note: str = "") -> Iterator[OnStep]:
    """Yields on_step; with lazy=True nothing is shown unless a step is reported (cache hits stay silent). A note
    (why this work is done at all) is a line of its own before the first step's."""
    console = Console(stderr=True)
    if not console.is_terminal:
        yield _noted(note, _log_lines(label, total))
        return
    progress = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]}"),
        TimeRemainingColumn(),
        console=console,
    )
    task = progress.add_task(label, total=total, loss="-")  # until the first step reports one

    def on_step(step: int, loss: float) -> None:
        if not progress.live.is_started:
            progress.start()
        progress.update(task, completed=step, loss=f"{loss:.3f}")

    if not lazy:
        progress.start()
    try:
        yield _noted(note, on_step)
    finally:
        progress.stop()


def _noted(note: str, on_step: OnStep) -> OnStep:
    """on_step that prints the note (when there is one) on stderr before the first step it is told of."""
    if not note:
        return on_step
    said = False

    def noting(step: int, loss: float) -> None:
        nonlocal said
        if not said:
            print(note, file=sys.stderr, flush=True)
            said = True
        on_step(step, loss)

    return noting


def _log_lines(label: str, total: int) -> OnStep:
    started = time.monotonic()
    every = max(1, total // 10)

    def on_step(step: int, loss: float) -> None:
        if step % every == 0 or step == total:
            elapsed = time.monotonic() - started
            print(f"{label}: step {step}/{total}  loss {loss:.3f}  {elapsed:.0f} s", file=sys.stderr, flush=True)

    return on_step


@contextlib.contextmanager
def sample_progress(label: str, max_tokens: int) -> Iterator[OnProgress]:
    """Yields on_progress for a corpus's sample: bytes read, documents, tokens per second and the time left.

    Nothing is shown unless a sample is built (a cached one stays silent). The bar is done when the sample
    holds max_tokens or the corpus is read whole, whichever comes first.
    """
    console = Console(stderr=True)
    started = time.monotonic()
    if not console.is_terminal:
        yield _sample_log_lines(label, started)
        return
    progress = Progress(
        TextColumn(f"sampling {label}"),
        BarColumn(),
        TextColumn("{task.fields[line]}"),
        TimeRemainingColumn(),
        console=console,
    )
    task = progress.add_task(label, total=1.0, line="")

    def on_progress(state: SampleProgress) -> None:
        if not progress.live.is_started:
            progress.start()
        progress.update(task, completed=state.fraction, line=_sample_line(state, time.monotonic() - started))

    try:
        yield on_progress
    finally:
        progress.stop()


def _sample_line(state: SampleProgress, elapsed: float) -> str:
    rate = state.tokens / elapsed if elapsed > 0 else 0.0
    return (
        f"{byte_size(state.sampled_bytes)} of {byte_size(state.corpus_bytes)}  {state.documents:,} docs  "
        f"{state.tokens:,}/{state.max_tokens or state.tokens:,} tokens  {rate:,.0f} tokens/s"
    )


def _sample_log_lines(label: str, started: float) -> OnProgress:
    shown = [-1]

    def on_progress(state: SampleProgress) -> None:
        tenth = int(state.fraction * 10)
        if tenth > shown[0]:
            shown[0] = tenth
            elapsed = time.monotonic() - started
            print(f"sampling {label}: {_sample_line(state, elapsed)}  {elapsed:.0f} s", file=sys.stderr, flush=True)

    return on_progress


def byte_size(count: float) -> str:
    """ "820 B", "3.9 MB", "5.0 TB": decimal units, as storage is sold and `ls -h --si` counts."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if count < 1000:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:,.1f} PB"
