"""The training loop shared by base pretraining and proxy trials, one process or sharded, and the one
training step every trainer takes (the rehearsal's DDP trainer included).

`fit` sets the LR from the recipe's schedule every step, calls an evaluation callback every
`eval_interval` steps and at the end, and ends a run whose loss is not finite, or blows up past
`divergence_factor` x the first step's loss, as diverged instead of wasting the rest of its budget.
A sharded trial runs the same loop on each of its workers, each on its share of every batch (its
`Group` gives the mean loss over them) and starts it where its checkpoint left off (`Progress`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch
import torch.nn.functional as F

from train_entry.group import Group
from train_entry.model import Runtime
from train_entry.optimizer import OptimizerConfig
from train_entry.trial_config import TrialStatus


class Batches(Protocol):
    def batch(self, index: int, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Input tokens and next-token labels, each [batch_size, seq_len]."""
        ...


@dataclass(frozen=True)
class LoopResult:
    status: TrialStatus
    steps: int
    tokens_seen: int
    reason: str | None = None


Evaluate = Callable[[int, int, float, float], bool]
"""evaluate(step, tokens_seen, train_loss, lr) -> True to stop training."""


@dataclass
class Progress:
    """Where a run stands, updated by `fit` after every step: what a checkpoint keeps and a resumed run starts from."""

    steps_done: int = 0
    first_loss: float | None = None
    """The first step's loss (the mean over a sharded trial's workers): divergence is measured against it."""


@dataclass(frozen=True)
class Sharing:
    """Who takes part in a run and where it starts: one process from step 0 unless a sharded trial says otherwise."""

    group: Group = field(default_factory=Group.single)
    progress: Progress = field(default_factory=Progress)
    optimizer: torch.optim.Optimizer | None = None
    """The run's optimizer when the caller keeps it (to checkpoint it); default a new recipe.adamw."""


def next_token_loss(
    model: torch.nn.Module,
    tokens: torch.Tensor,
    labels: torch.Tensor,
    *,
    compiled: bool = False,
    per_sequence: bool = False,
) -> torch.Tensor:
    """Mean cross-entropy over all label tokens (labels are already shifted by the dataset), or with `per_sequence`
    each sequence's mean ([batch]); `compiled` fuses the logits' fp32 upcast into the softmax instead of writing an
    fp32 copy (4 GB at 8192 tokens of a 128k vocabulary)."""
    # No KV cache: training reads none, and its per-layer index would give every compiled layer a graph of its own.
    logits = model(input_ids=tokens, use_cache=False).logits
    loss = _compiled_cross_entropy(per_sequence) if compiled else functools.partial(_cross_entropy, per_sequence)
    return loss(logits, labels)


def _cross_entropy(per_sequence: bool, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    if not per_sequence:
        return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
    tokens = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), reduction="none")
    return tokens.view(labels.shape).mean(dim=1)


@functools.cache
def _compiled_cross_entropy(per_sequence: bool) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    # Made on first use: torch.compile imports dynamo (~1 s).
    return torch.compile(functools.partial(_cross_entropy, per_sequence), dynamic=False)


def train_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    tokens: torch.Tensor,
    labels: torch.Tensor,
    *,
    lr: float,
    grad_clip: float,
    runtime: Runtime,
) -> torch.Tensor:
    """One optimizer step at `lr` on one batch; returns the batch's loss (a tensor, not yet synchronised)."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    model.train()
    with runtime.autocast():
        loss = next_token_loss(model, tokens.to(runtime.device), labels.to(runtime.device), compiled=runtime.compiled)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


def fit(
    model: torch.nn.Module,
    batches: Batches,
    recipe: OptimizerConfig,
    runtime: Runtime,
    *,
    steps: int,
    batch_size: int,
    peak_lr: float,
    eval_interval: int,
    divergence_factor: float,
    evaluate: Evaluate,
    on_step: Callable[[int, float], None] | None = None,
    sharing: Sharing | None = None,
) -> LoopResult:
    """Trains `steps` steps of `batch_size` sequences; evaluates every `eval_interval` and at the end.

    With `sharing`, `batches` gives this worker's share of each batch, the loss is the mean over the group's
    workers, and the run starts after `sharing.progress.steps_done` steps (resumed), updating it as it goes.
    """
    sharing = sharing or Sharing()
    group, progress = sharing.group, sharing.progress
    optimizer = sharing.optimizer or recipe.adamw(model, peak_lr=peak_lr, fused=runtime.device.type == "cuda")
    tokens_per_step = 0
    for step in range(progress.steps_done, steps):
        lr = recipe.lr_at(step, peak_lr=peak_lr, total_steps=steps)
        tokens, labels = batches.batch(step, batch_size)
        tokens_per_step = labels.numel() * group.size
        loss = group.mean(
            train_step(model, optimizer, tokens, labels, lr=lr, grad_clip=recipe.grad_clip, runtime=runtime)
        )
        done = progress.steps_done = step + 1
        progress.first_loss = progress.first_loss if progress.first_loss is not None else loss
        reason = _divergence(loss, progress.first_loss, divergence_factor, step=done)
        if reason is not None:
            return LoopResult(TrialStatus.DIVERGED, done, done * tokens_per_step, reason)
        if on_step is not None:
            on_step(done, loss)
        evaluates = done % eval_interval == 0 or done == steps
        if evaluates and evaluate(done, done * tokens_per_step, loss, lr):
            return LoopResult(TrialStatus.STOPPED, done, done * tokens_per_step, f"stopped by report at step {done}")
    return LoopResult(TrialStatus.COMPLETED, steps, steps * tokens_per_step)


def _divergence(loss: float, first_loss: float, factor: float, *, step: int) -> str | None:
    if not math.isfinite(loss):
        return f"loss is {loss} at step {step}"
    if loss > factor * first_loss:
        return f"loss {loss:.3f} at step {step} exceeds {factor:g} x the first step's {first_loss:.3f}"
    return None


@torch.no_grad()
def sequence_losses(
    model: torch.nn.Module,
    tokens: torch.Tensor,
    labels: torch.Tensor,
    runtime: Runtime,
    batch_size: int,
    group: Group | None = None,
) -> torch.Tensor:
    """Each sequence's mean token loss over a fixed set of sequences (float64 [n], on the CPU), in batches of
    `batch_size`: what a validation loss is the mean of, and whose spread says how much another draw of text
    would move it.

    A sharded trial's workers take the batches in turn and sum their rows into one vector. Every worker takes part
    in every forward pass of a sharded model (each gathers the layers' weights from all), so one left without a
    batch in the last round runs the first batch again and does not count it.
    """
    group = group or Group.single()
    model.eval()
    starts = range(0, len(tokens), batch_size)
    losses = torch.zeros(len(tokens), dtype=torch.float64)
    for round_ in range(math.ceil(len(starts) / group.size)):
        index = round_ * group.size + group.rank
        counted = index < len(starts)
        chunk = slice(starts[index if counted else 0], starts[index if counted else 0] + batch_size)
        with runtime.autocast():
            loss = next_token_loss(
                model,
                tokens[chunk].to(runtime.device),
                labels[chunk].to(runtime.device),
                compiled=runtime.compiled,
                per_sequence=True,
            )
        if counted:
            losses[chunk] = loss.double().cpu()
    return group.total(losses).cpu()
