"""A sharded trial's checkpoint: its model and optimizer shards, saved by torch.distributed.checkpoint, and its place.

<output_dir>/checkpoint/step_0000040/ holds DCP's files (each worker's shards, rank 0's .metadata) and
progress.json, which rank 0 writes once every worker's shards are on disk: the digest of the trial
config, the steps done, the first step's loss (divergence is measured against it), the wall time so far
and the evaluations so far (their metrics, and their losses document by document). A folder without a valid progress.json is a save that did not finish, or not
this config's, or one whose record says another step than the checkpoint was saved at, and is passed over;
a record edited along with its folder's name is refused by the optimizer state's own step count. Only the newest finished checkpoint is kept, and none once the trial
ends: at 12 bytes per parameter (fp32 weights and Adam's two moments) an 8B trial's is ~96 GB.

A retry of the same trial config (Ray Train restarting its workers, or a rerun of the sweep) resumes from it
with the same weights, Adam state (step counts included), schedule position and history: it trains each
step after the checkpoint once and reports each evaluation after it once.

The folder is read back as untrusted input: DCP's .metadata is a pickle, which is unpickled here with only
the classes DCP's own metadata is made of (a planted one that names anything else is refused unbuilt), and
the objects among the shards are read by DCP with torch.load(weights_only=True).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import sys
import time
from pathlib import Path

import torch
import torch.distributed.checkpoint as dcp
from pydantic import ConfigDict, Field, ValidationError, model_validator
from torch.distributed.checkpoint.metadata import Metadata, StorageMeta
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from train_entry.config import StrictConfig
from train_entry.file_format import CHECKPOINT_PROGRESS
from train_entry.group import Group
from train_entry.text_losses import TextLosses
from train_entry.trial_config import Metrics, TrialConfig

CHECKPOINT_DIR = "checkpoint"
PROGRESS_JSON = "progress.json"
MAX_PROGRESS_BYTES = 64 * 1024**2
"""progress.json holds one small record per evaluation: far below this even at a million steps."""


class SavedProgress(StrictConfig):
    """progress.json: where a checkpointed trial stood."""

    model_config = ConfigDict(allow_inf_nan=True)  # an evaluation may have measured a non-finite loss

    config_digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    steps_done: int = Field(gt=0)
    first_loss: float
    wall_seconds: float = Field(ge=0.0)
    """The trial's training time up to the checkpoint, over all its attempts."""
    history: list[Metrics]
    documents: list[TextLosses]
    """Each evaluation's losses document by document, in the order of `history`."""

    @model_validator(mode="after")
    def _one_per_evaluation(self) -> SavedProgress:
        if len(self.documents) != len(self.history):
            raise ValueError(f"documents are one per evaluation, got {len(self.documents)} for {len(self.history)}")
        return self


def config_digest(config: TrialConfig) -> str:
    return hashlib.sha256(config.model_dump_json().encode()).hexdigest()


def save_checkpoint(
    output_dir: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, saved: SavedProgress, group: Group
) -> Path:
    """Saves the shards (every worker) and progress.json (rank 0, last); removes the checkpoint it replaces."""
    path = output_dir / CHECKPOINT_DIR / _folder(saved.steps_done)
    started = time.perf_counter()
    model_state, optimizer_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=path)
    if group.is_leader:
        # dcp.save returns on the coordinator after every rank's write is done and .metadata is written.
        partial = path / f"{PROGRESS_JSON}.partial"
        partial.write_text(CHECKPOINT_PROGRESS.dumps(saved))
        os.replace(partial, path / PROGRESS_JSON)
        print(f"saved {path} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        for older in (output_dir / CHECKPOINT_DIR).glob("step_*"):
            if older != path:
                shutil.rmtree(older, ignore_errors=True)
    return path


def resume(
    config: TrialConfig, model: torch.nn.Module, optimizer: torch.optim.Optimizer, group: Group
) -> SavedProgress | None:
    """Loads this config's newest finished checkpoint into the model and optimizer; None when there is none.

    Rank 0 chooses it and every worker loads the same one, also where workers see the folder differently.
    """
    found = _newest(Path(config.output_dir), config_digest(config)) if group.is_leader else None
    found = group.share(found)
    if found is None:
        return None
    path, saved = found
    model_state, optimizer_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optimizer": optimizer_state}
    dcp.load(state, storage_reader=MetadataCheckingReader(path))
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    _check_optimizer_steps(path, optimizer, saved)
    if group.is_leader:
        print(f"resumed from {path}: {saved.steps_done} of {config.proxy.steps} steps done", file=sys.stderr)
    return saved


def remove_checkpoints(output_dir: Path, group: Group) -> None:
    """The trial has ended: nothing will resume it."""
    if group.is_leader:
        shutil.rmtree(output_dir / CHECKPOINT_DIR, ignore_errors=True)


class CheckpointMismatch(ValueError):
    """A checkpoint whose progress.json and shards disagree on the steps done: resuming would train the wrong steps."""


def _check_optimizer_steps(path: Path, optimizer: torch.optim.Optimizer, saved: SavedProgress) -> None:
    """The optimizer state saved with the shards counts one step per trial step: CheckpointMismatch unless it is
    at progress.json's steps_done (a record edited along with its folder's name)."""
    counted = {int(state["step"]) for state in optimizer.state.values() if "step" in state}
    if counted and counted != {saved.steps_done}:
        raise CheckpointMismatch(
            f"{path / PROGRESS_JSON}: steps_done is {saved.steps_done}, but the optimizer state saved beside it has "
            f"taken {', '.join(map(str, sorted(counted)))} step(s): the record is not this checkpoint's; remove "
            f"{path} to run the trial from its start"
        )


def _newest(output_dir: Path, digest: str) -> tuple[Path, SavedProgress] | None:
    for path in sorted((output_dir / CHECKPOINT_DIR).glob("step_*"), reverse=True):
        saved = _read_progress(path / PROGRESS_JSON)
        if saved is None or saved.config_digest != digest:
            continue
        if path.name != _folder(saved.steps_done):  # the step it was saved at names its folder
            print(
                f"checkpoint {path} is not resumed from: its {PROGRESS_JSON} says {saved.steps_done} steps done, "
                f"where the checkpoint was saved at step {path.name.removeprefix('step_').lstrip('0') or 0}",
                file=sys.stderr,
            )
            continue
        return path, saved
    return None


def _folder(steps_done: int) -> str:
    return f"step_{steps_done:07d}"


def _read_progress(path: Path) -> SavedProgress | None:
    """progress.json if it is whole and valid; a torn or foreign one means that checkpoint is not resumed from."""
    try:
        if path.stat().st_size > MAX_PROGRESS_BYTES:
            raise ValueError(f"larger than {MAX_PROGRESS_BYTES} bytes")
        return CHECKPOINT_PROGRESS.read(path, SavedProgress)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, ValidationError) as error:
        first = str(error).splitlines()[0]
        print(f"checkpoint {path.parent} is not resumed from: {path.name} is unreadable ({first})", file=sys.stderr)
        return None


class MetadataUnpickler(pickle.Unpickler):
    """Builds only what DCP's metadata holds: its own dataclasses, torch sizes, dtypes and layouts, paths."""

    MODULES = ("torch.distributed.checkpoint.metadata", "torch.distributed.checkpoint.filesystem")
    NAMES = frozenset({("torch", "Size"), ("torch.serialization", "_get_layout"), ("pathlib", "PosixPath")})

    def find_class(self, module: str, name: str):
        found = super().find_class(module, name) if self._allowed(module, name) else None
        if found is None:
            raise pickle.UnpicklingError(
                f"a checkpoint's .metadata names {module}.{name}, which DCP metadata never holds"
            )
        return found

    def _allowed(self, module: str, name: str) -> bool:
        if (module, name) in self.NAMES or module in self.MODULES:
            return True
        return module == "torch" and isinstance(getattr(torch, name, None), torch.dtype)


class MetadataCheckingReader(dcp.FileSystemReader):
    """DCP's file-system reader, unpickling .metadata with MetadataUnpickler instead of pickle.load."""

    def read_metadata(self, *args, **kwargs) -> Metadata:
        with self.fs.create_stream(self._get_metadata_path(kwargs.get("rank")), "rb") as stream:
            metadata = MetadataUnpickler(stream).load()
        if not isinstance(metadata, Metadata):
            raise pickle.UnpicklingError(
                f"a checkpoint's .metadata holds a {type(metadata).__name__}, not DCP Metadata"
            )
        if getattr(metadata, "storage_meta", None) is None:
            metadata.storage_meta = StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata
