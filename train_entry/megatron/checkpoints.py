"""Where a full run's checkpoints live and which one a (re)start loads.

Megatron's layout: `<dir>/iter_0000500/` holds one distributed checkpoint and the tracker file
`<dir>/latest_checkpointed_iteration.txt` names the newest complete one (or says "release" for a
converted model in `<dir>/release/`). The tracker is written only after every rank has finished
saving, and atomically, so a run killed mid-save resumes from the previous complete checkpoint.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from pathlib import Path

from train_entry.megatron.config import Checkpoint

TRACKER = "latest_checkpointed_iteration.txt"
RELEASE = "release"
_METADATA = "metadata.json"
"""Written by torch.distributed.checkpoint into every complete distributed checkpoint."""


class CheckpointError(ValueError):
    """A checkpoint directory that cannot be started from: missing, incomplete or of another model."""


def iteration_dir(root: Path, iteration: int) -> Path:
    return Path(root) / f"iter_{iteration:07d}"


def latest_iteration(root: Path) -> int | None:
    """The iteration the tracker in `root` names; None when `root` holds no checkpoint yet."""
    tracker = Path(root) / TRACKER
    if not tracker.is_file():
        return None
    text = tracker.read_text().strip()
    try:
        iteration = int(text)
    except ValueError:
        raise CheckpointError(f"{tracker}: expected an iteration number, got {text!r}") from None
    if iteration < 0:
        raise CheckpointError(f"{tracker}: expected an iteration number >= 0, got {iteration}")
    _require_complete(iteration_dir(root, iteration), named_by=tracker)
    return iteration


def write_tracker(root: Path, iteration: int) -> None:
    """Name `iteration` as the newest complete checkpoint; atomic, so a reader sees the old or the new one."""
    tracker = Path(root) / TRACKER
    partial = tracker.with_name(f".{TRACKER}.{os.getpid()}")
    partial.write_text(f"{iteration}\n")
    os.replace(partial, tracker)


class StartKind(str, enum.Enum):
    RESUME = "resume"
    """The run's own latest checkpoint: weights, optimizer, LR schedule and iteration."""
    BASE = "base"
    """The base model's weights only: a fresh optimizer and iteration 0 (continued pretraining's start)."""
    SCRATCH = "scratch"
    """Random weights at iteration 0 (no base configured; smoke tests only)."""


@dataclass(frozen=True)
class StartPoint:
    kind: StartKind
    directory: Path | None
    """The distributed checkpoint to load; None from scratch."""
    iteration: int
    """The iteration training continues from."""


def start_point(checkpoint: Checkpoint) -> StartPoint:
    """Resume from the save directory's latest checkpoint when there is one, else start from the base.

    A resume never falls back to the base: once the run has saved, its optimizer state, LR
    schedule and iteration count are the run's and are never reset.
    """
    save_dir = Path(checkpoint.save_dir)
    latest = latest_iteration(save_dir)
    if latest is not None:
        return StartPoint(StartKind.RESUME, iteration_dir(save_dir, latest), latest)
    if checkpoint.base_dir is None:
        return StartPoint(StartKind.SCRATCH, None, 0)
    return StartPoint(StartKind.BASE, base_checkpoint_dir(Path(checkpoint.base_dir)), 0)


def base_checkpoint_dir(base_dir: Path) -> Path:
    """The distributed checkpoint of a base: `base_dir` itself, or the one its tracker names.

    Megatron-Bridge's import and Megatron-LM's converters write a checkpoint root with a tracker
    (iter_0000000/ or release/); a bare distributed-checkpoint directory is accepted as well.
    """
    if (base_dir / _METADATA).is_file():
        return base_dir
    tracker = base_dir / TRACKER
    if tracker.is_file():
        if tracker.read_text().strip() == RELEASE:
            directory = base_dir / RELEASE
            _require_complete(directory, named_by=tracker)
            return directory
        return iteration_dir(base_dir, latest_iteration(base_dir))
    raise CheckpointError(
        f"checkpoint.base_dir {str(base_dir)!r} is not a Megatron distributed checkpoint: it has neither "
        f"{_METADATA} nor {TRACKER} (convert a Hugging Face model with Megatron-Bridge first, see README)"
    )


def _require_complete(directory: Path, *, named_by: Path) -> None:
    if not (directory / _METADATA).is_file():
        raise CheckpointError(
            f"{named_by} names {directory}, which is not a complete distributed checkpoint (no {_METADATA})"
        )
