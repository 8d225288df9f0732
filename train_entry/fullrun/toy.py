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
from train_entry.loop import Optimization, adamw, next_token_loss
from train_entry.model import Runtime, load_causal_lm
from train_entry.schedule import lr_at

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
    optimization = Optimization(
        steps=steps,
        batch_size=config.micro_batch_size,
        peak_lr=config.peak_lr,
        warmup_steps=config.warmup_steps,
        min_lr_ratio=config.min_lr_ratio,
        schedule="cosine",
        weight_decay=config.weight_decay,
        grad_clip=config.grad_clip,
        eval_interval=checkpoint_interval,
        divergence_factor=float("inf"),
    )
    optimizer = adamw(model, optimization, runtime)
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
        lr = lr_at(
            step,
            peak_lr=config.peak_lr,
            warmup_steps=config.warmup_steps,
            total_steps=steps,
            min_lr_ratio=config.min_lr_ratio,
        )
        for group in optimizer.param_groups:
            group["lr"] = lr
        # Global batch `step` is micro-batches [step * world, (step + 1) * world); this rank takes one.
        tokens, labels = stream.batch(step * world + rank, config.micro_batch_size)
        ddp.train()
        loss = next_token_loss(ddp, tokens, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ddp.parameters(), config.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

        mean = loss.detach().clone()
        dist.all_reduce(mean)
        mean_loss = mean.item() / world
        done = step + 1
        time.sleep(max(0.0, config.min_step_seconds - (time.perf_counter() - started)))
        log(f"step {done}/{steps} loss {mean_loss:.4f} lr {lr:.3g}")
        if done % checkpoint_interval == 0 or done == steps:
            losses.append((done, mean_loss))
            directory = None
            if rank == 0:
                directory = scratch / f"checkpoint-{done:08d}"
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
