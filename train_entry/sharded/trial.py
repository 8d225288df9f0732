"""One proxy trial sharded over the workers of torch.distributed's default group (FSDP2), resumable.

Every worker runs `run_sharded_trial(config, report)` with the process group already started (by Ray
Train's TorchTrainer in a sweep, by torchrun in a benchmark). It is the one-process trial of
train_entry.proxy, the same data, schedule, evaluation and metrics, with three differences:

- the model is sharded (train_entry.sharded.fsdp) and each worker trains on its equal part of every batch, so the
  workers together take the step one process would (FSDP averages their gradients);
- `report` is called on rank 0 alone, and what it answers stops every worker at the same step;
- after each evaluation that lets it go on (every checkpoint_interval steps) it checkpoints,
  and a retry of the same config resumes from that checkpoint (train_entry.sharded.checkpoint).

It knows nothing of Ray or Optuna. Rank 0 writes the trial's files; every worker returns the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import torch

from train_entry.group import Group
from train_entry.loop import Progress, Sharing
from train_entry.model import Runtime
from train_entry.proxy import Report, train, trial_data, write_config, write_result
from train_entry.sharded.checkpoint import SavedProgress, config_digest, remove_checkpoints, resume, save_checkpoint
from train_entry.sharded.fsdp import sharded_causal_lm
from train_entry.text_losses import TextLosses
from train_entry.trial_config import Metrics, TrialConfig, TrialResult


def run_sharded_trial(
    config: TrialConfig, report: Report, *, on_step: Callable[[int, float], None] | None = None
) -> TrialResult:
    """Runs one proxy trial on this worker of the default process group; see the module's docstring.
    `on_step(step, train_loss)` (the mean over the workers) is for progress bars and benchmarks only."""
    started = time.perf_counter()
    runtime = Runtime.for_shard(compiled=config.compile)
    group = Group.default(runtime.device)
    if config.proxy.batch_size % group.size:
        raise ValueError(
            f"proxy.batch_size ({config.proxy.batch_size}) must be a multiple of the trial's {group.size} workers, "
            "each of which trains on an equal part of every batch"
        )
    if group.is_leader:
        write_config(config)
    torch.set_num_threads(config.threads)
    # megatron-core's rank 0 writes the index cache first and the other workers read it: one folder for all.
    stream, valid = trial_data(config, cache_dir=Path(config.output_dir) / "megatron_index")
    torch.manual_seed(config.seed)
    model = sharded_causal_lm(config.base_dir, runtime, group, activation_checkpointing=config.activation_checkpointing)
    optimizer = config.proxy.adamw(model, peak_lr=config.peak_lr, fused=runtime.device.type == "cuda")
    saved = resume(config, model, optimizer, group)
    earlier = saved.wall_seconds if saved is not None else 0.0
    progress = Progress(saved.steps_done, saved.first_loss) if saved is not None else Progress()
    keep = _keeper(config, model, optimizer, progress, group, elapsed=lambda: earlier + time.perf_counter() - started)
    trained = train(
        config,
        model,
        stream.worker_share(rank=group.rank, parts=group.size),
        valid,
        runtime,
        report=report,
        on_step=on_step,
        sharing=Sharing(group=group, progress=progress, optimizer=optimizer),
        history=(list(saved.history), list(saved.documents)) if saved is not None else None,
        keep=keep,
    )
    remove_checkpoints(Path(config.output_dir), group)
    wall_seconds = earlier + time.perf_counter() - started
    return write_result(config, trained, wall_seconds=wall_seconds, write=group.is_leader)


def _keeper(
    config: TrialConfig,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    progress: Progress,
    group: Group,
    *,
    elapsed: Callable[[], float],
) -> Callable[[list[Metrics], list[TextLosses]], None]:
    """Checkpoints after every checkpoint_interval-th step's evaluation, but not after the last step: it ends the trial."""
    digest = config_digest(config)

    def keep(history: list[Metrics], documents: list[TextLosses]) -> None:
        done = progress.steps_done
        if done % config.checkpoint_steps or done == config.proxy.steps:
            return
        saved = SavedProgress(
            config_digest=digest,
            steps_done=done,
            first_loss=progress.first_loss,
            wall_seconds=elapsed(),
            history=history,
            documents=documents,
        )
        save_checkpoint(Path(config.output_dir), model, optimizer, saved, group)

    return keep
