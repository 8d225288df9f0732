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
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from train_entry.data.blend import Batch, build_stream, build_validation_sets
from train_entry.data.tokenizer import megatron_tokenizer
from train_entry.fullrun.config import ToyTrainer
from train_entry.loop import sequence_losses, train_step
from train_entry.megatron.evaluation import Evaluator
from train_entry.model import Runtime, load_causal_lm
from train_entry.trial_config import CorpusPrefixes

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
    stopped: bool = False
    """Whether the evaluator stopped the run (at `step`, after its checkpoint)."""


def train_toy(
    config: ToyTrainer,
    *,
    steps: int,
    checkpoint_interval: int,
    resume_dir: Path | None,
    scratch: Path,
    on_checkpoint: OnCheckpoint,
    log: Callable[[str], None],
    evaluator: Evaluator | None = None,
) -> ToyResult:
    """Trains to `steps` in the job's process group (already initialised), resuming from resume_dir if given. With
    validation sets and an evaluator (rank 0's), it evaluates them at step 0 of a fresh run (the base) and at every
    checkpoint, and checkpoints and stops when the evaluator asks."""
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)  # one CPU slot per worker
    runtime = Runtime.detect()
    stream, valid = _data(config, steps=steps, world=world, scratch=scratch)
    torch.manual_seed(config.seed)
    model = load_causal_lm(config.base_dir, runtime)
    optimizer = config.adamw(model, peak_lr=config.peak_lr)
    start, losses = 0, []
    if resume_dir is not None:
        state = load_state(resume_dir)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start, losses = state["step"], list(state["losses"])
        if evaluator is not None:
            evaluator.restore(state.get("watch", {}))
        log(f"resumed from step {start} (checkpoint {resume_dir.name})")
    evaluate = partial(_evaluate, model, valid, runtime, evaluator, batch_size=config.micro_batch_size)
    if start == 0:
        evaluate(0)  # the base's losses, before the first step; a stop here would have nothing to stop
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
            stop = evaluate(done)
            losses.append((done, mean_loss))
            directory = scratch / f"checkpoint-{done:08d}" if rank == 0 else None
            if directory is not None:
                directory.mkdir(parents=True, exist_ok=True)
                watch = evaluator.state() if evaluator is not None else {}
                save_state(directory, model=model, optimizer=optimizer, step=done, losses=losses, watch=watch)
            on_checkpoint(done, mean_loss, directory)
            if stop:
                return ToyResult(start_step=start, step=done, losses=losses, stopped=True)
    return ToyResult(start_step=start, step=steps, losses=losses)


def _data(config: ToyTrainer, *, steps: int, world: int, scratch: Path) -> tuple[Any, list[Batch]]:
    """The blended training stream and the validation sets."""
    tokenizer = megatron_tokenizer(config.tokenizer_dir)
    # megatron-core's rank 0 writes the index cache and the other ranks read it: one shared folder.
    cache_dir = scratch / "megatron_index"
    stream = build_stream(
        config.train,
        config.weights,
        num_samples=steps * config.micro_batch_size * world,
        seq_len=config.seq_len,
        seed=config.seed,
        tokenizer=tokenizer,
        cache_dir=cache_dir,
    )
    return stream, _validation_sets(config, tokenizer, cache_dir)


def _validation_sets(config: ToyTrainer, tokenizer: Any, cache_dir: Path) -> list[Batch]:
    """Each validation set apart, in the job's order. Built on every rank: megatron-core's builder synchronises them."""
    sets = []
    for prefix in config.valid.values():
        # One prefix on both sides with no non-English share: its "general" set is that prefix's text alone.
        both = CorpusPrefixes(general=prefix, domain=prefix)
        built = build_validation_sets(
            both, 0.0, num_sequences=config.eval_sequences, seq_len=config.seq_len, seed=config.seed,
            tokenizer=tokenizer, cache_dir=cache_dir,
        )  # fmt: skip
        sets.append(built.general)
    return sets


def _evaluate(
    model: torch.nn.Module,
    valid: list[Batch],
    runtime: Runtime,
    evaluator: Evaluator | None,
    step: int,
    *,
    batch_size: int,
) -> bool:
    """Rank 0 measures each set and asks the evaluator; every rank learns whether to stop."""
    stop = torch.zeros(1)
    if dist.get_rank() == 0 and valid and evaluator is not None:
        was_training = model.training
        model.eval()
        losses = [float(sequence_losses(model, *batch, runtime, batch_size).mean()) for batch in valid]
        model.train(was_training)
        stop[0] = float(evaluator.evaluate(step, losses))
    dist.broadcast(stop, src=0)
    return bool(stop.item())


def save_state(
    directory: Path,
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    step: int,
    losses: list[tuple[int, float]],
    watch: dict[str, Any] | None = None,
) -> None:
    """Writes what a resume needs as tensors, dicts, lists and numbers only, so load_state can refuse the rest."""
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": step,
        "losses": losses,
        "watch": watch or {},
    }
    torch.save(state, directory / STATE_FILE)


def load_state(directory: Path) -> dict[str, Any]:
    """The state save_state wrote; pickle.UnpicklingError for a file holding any other object.

    Checkpoints sit on shared storage where anyone with write access could replace one, and a
    full unpickle runs whatever code the file names: weights_only allows only tensors and plain
    containers.
    """
    return torch.load(directory / STATE_FILE, weights_only=True)
