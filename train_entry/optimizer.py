"""AdamW and its learning-rate schedule: one recipe for proxy trials, the built-in base's
pretraining and the rehearsal's trainer.

`OptimizerConfig` declares the settings once; the configs that train (ProxyConfig,
BuiltinBaseConfig, ToyTrainer) extend it, so a spec writes them where they apply
(`proxy.warmup_steps`, `base.builtin.weight_decay`) and the training loop reads them from there.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from train_entry.config import StrictConfig

if TYPE_CHECKING:  # torch is imported where an optimizer is built: the spec and run files load without it
    import torch


def peak_lr(lr_fraction: float, *, max_lr: float) -> float:
    """The peak LR of a point on the sweep's LR axis: lr_fraction of the base model's own peak LR (max_lr), the one
    rule every trial, table, report and plan applies."""
    return lr_fraction * max_lr


class OptimizerConfig(StrictConfig):
    """AdamW with decoupled weight decay on matrices only, global-norm clipping, and a linear
    warmup to the peak LR followed by a decay to a floor."""

    warmup_steps: int = Field(ge=0)
    """Steps of linear warmup from peak/warmup_steps to the peak: re-warming a converged base."""
    schedule: Literal["cosine", "linear", "constant"] = "cosine"
    """Decay after warmup; cosine as in the reference recipe."""
    min_lr_ratio: float = Field(0.1, ge=0.0, le=1.0)
    """LR floor as a fraction of the peak LR (~peak/10 per Chinchilla)."""
    weight_decay: float = Field(0.1, ge=0.0, le=10.0)
    """AdamW decoupled weight decay, Llama's 0.1."""
    grad_clip: float = Field(1.0, gt=0.0, le=1e6)
    """Global gradient-norm clip, Llama's 1.0."""

    BETAS: ClassVar[tuple[float, float]] = (0.9, 0.95)
    """Llama's AdamW betas."""

    def lr_at(self, step: int, *, peak_lr: float, total_steps: int) -> float:
        """LR for optimizer step `step` (0-based) of `total_steps`."""
        if step < self.warmup_steps:
            return peak_lr * (step + 1) / self.warmup_steps
        if self.schedule == "constant":
            return peak_lr
        min_lr = peak_lr * self.min_lr_ratio
        progress = min(1.0, (step - self.warmup_steps) / max(1, total_steps - 1 - self.warmup_steps))
        if self.schedule == "linear":
            return peak_lr - (peak_lr - min_lr) * progress
        return min_lr + 0.5 * (peak_lr - min_lr) * (1.0 + math.cos(math.pi * progress))

    def adamw(self, model: torch.nn.Module, *, peak_lr: float, fused: bool = False) -> torch.optim.AdamW:
        import torch

        # Norm gains and biases are not decayed: decay would pull RMSNorm scales towards zero.
        params = [p for p in model.parameters() if p.requires_grad]
        groups = [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": self.weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(groups, lr=peak_lr, betas=self.BETAS, fused=fused)
