"""The training loop shared by base pretraining and proxy trials.

AdamW with decoupled weight decay on matrices only, global-norm clipping, the LR from
`schedule.lr_at` set every step, an evaluation callback every `eval_interval` steps and at the
end. A non-finite loss, or one that blows up past `divergence_factor` x the first step's loss,
ends the run as diverged instead of wasting the rest of its budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import torch
import torch.nn.functional as F

from train_entry.model import Runtime
from train_entry.schedule import lr_at
from train_entry.trial_config import TrialStatus


class Batches(Protocol):
    def batch(self, index: int, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Input tokens and next-token labels, each [batch_size, seq_len]."""
        ...


@dataclass(frozen=True)
class Optimization:
    steps: int
    batch_size: int
    peak_lr: float
    warmup_steps: int
    min_lr_ratio: float
    schedule: Literal["cosine", "linear", "constant"]
    weight_decay: float
    grad_clip: float
    eval_interval: int
    divergence_factor: float
    betas: tuple[float, float] = (0.9, 0.95)
    """Llama's AdamW betas."""


@dataclass(frozen=True)
class LoopResult:
    status: TrialStatus
    steps: int
    tokens_seen: int
    reason: str | None = None


Evaluate = Callable[[int, int, float, float], bool]
"""evaluate(step, tokens_seen, train_loss, lr) -> True to stop training."""


def next_token_loss(model: torch.nn.Module, tokens: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over all label tokens (labels are already shifted by the dataset)."""
    logits = model(input_ids=tokens).logits
    return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())


def adamw(model: torch.nn.Module, optimization: Optimization, runtime: Runtime) -> torch.optim.AdamW:
    # Norm gains and biases are not decayed: decay would pull RMSNorm scales towards zero.
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": optimization.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(
        groups, lr=optimization.peak_lr, betas=optimization.betas, fused=runtime.device.type == "cuda"
    )


def train(
    model: torch.nn.Module,
    batches: Batches,
    optimization: Optimization,
    runtime: Runtime,
    *,
    evaluate: Evaluate,
    on_step: Callable[[int, float], None] | None = None,
) -> LoopResult:
    optimizer = adamw(model, optimization, runtime)
    tokens_per_step = 0
    first_loss = None
    for step in range(optimization.steps):
        lr = lr_at(
            step,
            peak_lr=optimization.peak_lr,
            warmup_steps=optimization.warmup_steps,
            total_steps=optimization.steps,
            min_lr_ratio=optimization.min_lr_ratio,
            schedule=optimization.schedule,
        )
        for group in optimizer.param_groups:
            group["lr"] = lr

        tokens, labels = batches.batch(step, optimization.batch_size)
        tokens, labels = tokens.to(runtime.device), labels.to(runtime.device)
        tokens_per_step = labels.numel()
        model.train()
        with runtime.autocast():
            loss = next_token_loss(model, tokens, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), optimization.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

        train_loss = loss.item()
        done = step + 1
        first_loss = first_loss if first_loss is not None else train_loss
        if not math.isfinite(train_loss):
            return LoopResult(
                TrialStatus.DIVERGED, done, done * tokens_per_step, f"loss is {train_loss} at step {done}"
            )
        if train_loss > optimization.divergence_factor * first_loss:
            reason = (
                f"loss {train_loss:.3f} at step {done} exceeds {optimization.divergence_factor:g} x "
                f"the first step's {first_loss:.3f}"
            )
            return LoopResult(TrialStatus.DIVERGED, done, done * tokens_per_step, reason)
        if on_step is not None:
            on_step(done, train_loss)
        evaluates = done % optimization.eval_interval == 0 or done == optimization.steps
        if evaluates and evaluate(done, done * tokens_per_step, train_loss, lr):
            return LoopResult(TrialStatus.STOPPED, done, done * tokens_per_step, f"stopped by report at step {done}")
    return LoopResult(TrialStatus.COMPLETED, optimization.steps, optimization.steps * tokens_per_step)


@torch.no_grad()
def mean_loss(
    model: torch.nn.Module, tokens: torch.Tensor, labels: torch.Tensor, runtime: Runtime, batch_size: int
) -> float:
    """Mean token loss over a fixed set of sequences, in batches of `batch_size`."""
    model.eval()
    total = 0.0
    for start in range(0, len(tokens), batch_size):
        chunk = slice(start, start + batch_size)
        with runtime.autocast():
            loss = next_token_loss(model, tokens[chunk].to(runtime.device), labels[chunk].to(runtime.device))
        total += loss.item() * labels[chunk].numel()
    return total / labels.numel()
