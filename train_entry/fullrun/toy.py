"""The rehearsal's trainer: the proxy model under torch DDP, checkpointing every N steps and resuming from one.

It stands in for the megatron-core entry at toy scale on CPU (gloo): the same blend machinery,
the same schedule and optimizer as a proxy trial, data-parallel over the job's workers. It
knows nothing of Ray: the worker passes the checkpoint to resume from and takes each new one
through `on_checkpoint`. Every step's batch is a function of the step alone, so a resumed run
sees exactly the samples an uninterrupted one would.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from train_entry.data.blend import build_stream
from train_entry.data.tokenizer import megatron_tokenizer
from train_entry.fullrun.config import ToyTrainer
from train_entry.loop import train_step
from train_entry.model import Runtime, load_causal_lm

STATE_FILE = "state.pt"

OnCheckpoint = Callable[[int, float, Path | None], None]
"""on_checkpoint(step, loss, directory): directory on rank 0, None on the other ranks; called on every rank."""


@dataclass(frozen=True)
class ToyResult:
    start_step: int
    """0 for a fresh run, K when it resumed from the checkpoint of step K."""
    step: int
    losses: list[tuple[int, float]]
    """(step, mean training loss over the workers) at every checkpoint, resumed history included."""


def train_toy(
    config: ToyTrainer,
    *,
    steps: int,
    checkpoint_interval: int,
    resume_dir: Path | None,
    scratch: Path,
    on_checkpoint: OnCheckpoint,
    log: Callable[[str], None],
) -> ToyResult:
    """Trains to `steps` in the job's process group (already initialised), resuming from resume_dir if given."""
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)  # one CPU slot per worker
    runtime = Runtime.detect()
    stream = build_stream(
        config.train,
        config.weights,
        num_samples=steps * config.micro_batch_size * world,
        seq_len=config.seq_len,
        seed=config.seed,
        tokenizer=megatron_tokenizer(config.tokenizer_dir),
        # megatron-core's rank 0 writes the index cache and the other ranks read it: one shared folder.
        cache_dir=scratch / "megatron_index",
    )
    torch.manual_seed(config.seed)
    model = load_causal_lm(config.base_dir, runtime)
    optimizer = config.adamw(model, peak_lr=config.peak_lr)
    start, losses = 0, []
    if resume_dir is not None:
        state = load_state(resume_dir)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start, losses = state["step"], list(state["losses"])
        log(f"resumed from step {start} (checkpoint {resume_dir.name})")
    ddp = DistributedDataParallel(model)

    for step in range(start, steps):
        started = time.perf_counter()
        lr = config.lr_at(step, peak_lr=config.peak_lr, total_steps=steps)
        # Global batch `step` is micro-batches [step * world, (step + 1) * world); this rank takes one.
        tokens, labels = stream.batch(step * world + rank, config.micro_batch_size)
        loss = train_step(ddp, optimizer, tokens, labels, lr=lr, grad_clip=config.grad_clip, runtime=runtime)
        dist.all_reduce(loss)
        mean_loss = loss.item() / world
        done = step + 1
        time.sleep(max(0.0, config.min_step_seconds - (time.perf_counter() - started)))
        log(f"step {done}/{steps} loss {mean_loss:.4f} lr {lr:.3g}")
        if done % checkpoint_interval == 0 or done == steps:
            losses.append((done, mean_loss))
            directory = scratch / f"checkpoint-{done:08d}" if rank == 0 else None
            if directory is not None:
                directory.mkdir(parents=True, exist_ok=True)
                save_state(directory, model=model, optimizer=optimizer, step=done, losses=losses)
            on_checkpoint(done, mean_loss, directory)
    return ToyResult(start_step=start, step=steps, losses=losses)


def save_state(
    directory: Path,
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    step: int,
    losses: list[tuple[int, float]],
) -> None:
    """Writes what a resume needs as tensors, dicts, lists and numbers only, so load_state can refuse the rest."""
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step, "losses": losses}
    torch.save(state, directory / STATE_FILE)


def load_state(directory: Path) -> dict[str, Any]:
    """The state save_state wrote; pickle.UnpicklingError for a file holding any other object.

    Checkpoints sit on shared storage where anyone with write access could replace one, and a
    full unpickle runs whatever code the file names: weights_only allows only tensors and plain
    containers.
    """
    return torch.load(directory / STATE_FILE, weights_only=True)
