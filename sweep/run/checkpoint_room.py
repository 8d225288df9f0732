"""Room on the run directory's file system for the checkpoints of the sharded trials running at once.

A sharded trial keeps its newest checkpoint (train_entry.sharded.checkpoint: fp32 weights and Adam's two moments,
12 bytes per parameter) until it ends, and writes the next beside it before removing the older one: two at its
peak. A file system without room for them fails each trial at a checkpoint, hours into the sweep; the sweep's first
lines warn instead of refusing, since free space is the file system's to change while the sweep runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sweep.run.progress import byte_size
from sweep.scale import total_params
from sweep.spec.shapes import base_shape
from sweep.spec.spec import SweepSpec
from train_entry.megatron.config import ModelShape

BYTES_PER_PARAMETER = 12


def checkpoints_held(*, steps: int, interval: int) -> int:
    """Checkpoints one trial holds at its peak: none when none is due before its last step (which ends it)."""
    return min((steps - 1) // interval, 2)


def checkpoint_room(
    shape: ModelShape, *, steps: int, interval: int, at_once: int, free_bytes: int, where: Path
) -> str | None:
    """A warning when `at_once` trials' checkpoints would not fit in `free_bytes` at `where`; None when they fit."""
    held = checkpoints_held(steps=steps, interval=interval)
    each = BYTES_PER_PARAMETER * total_params(shape)
    needed = at_once * held * each
    if needed <= free_bytes:
        return None
    peak = "two while it writes the next" if held == 2 else "one"
    return (
        f"a sharded trial keeps a checkpoint of {byte_size(each)} ({BYTES_PER_PARAMETER} bytes per parameter), "
        f"{peak}: {at_once} trial(s) at once need {byte_size(needed)} and {where} has {byte_size(free_bytes)} free; "
        "free some, run fewer trials at once (execution.concurrency), or checkpoint less often "
        "(execution.checkpoint_interval; from proxy.steps up none is written, and a lost worker restarts its trial)"
    )


def sweep_checkpoint_room(spec: SweepSpec, run_dir: Path, *, at_once: int) -> str | None:
    """checkpoint_room for `spec`'s trials in `run_dir`: None for one-process trials, which keep no checkpoint, and
    for a base whose config gives no Llama-family shape."""
    if not spec.execution.sharded:
        return None
    shape = base_shape(spec.base.model, spec.base.builtin, spec.proxy.seq_len)
    if shape is None:
        return None
    interval = spec.proxy.checkpoint_steps(spec.execution.checkpoint_interval)
    free = shutil.disk_usage(run_dir).free
    return checkpoint_room(shape, steps=spec.proxy.steps, interval=interval, at_once=at_once, free_bytes=free,
                           where=run_dir)  # fmt: skip
