"""The learning-rate schedule: linear warmup, then decay to a floor."""

from __future__ import annotations

import math
from typing import Literal


def lr_at(
    step: int,
    *,
    peak_lr: float,
    warmup_steps: int,
    total_steps: int,
    min_lr_ratio: float,
    schedule: Literal["cosine", "linear", "constant"] = "cosine",
) -> float:
    """LR for optimizer step `step` (0-based) of `total_steps`."""
    if step < warmup_steps:
        return peak_lr * (step + 1) / warmup_steps
    min_lr = peak_lr * min_lr_ratio
    if schedule == "constant":
        return peak_lr
    progress = min(1.0, (step - warmup_steps) / max(1, total_steps - 1 - warmup_steps))
    if schedule == "linear":
        return peak_lr - (peak_lr - min_lr) * progress
    return min_lr + 0.5 * (peak_lr - min_lr) * (1.0 + math.cos(math.pi * progress))
