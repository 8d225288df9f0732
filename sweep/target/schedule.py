"""The mean of an LR schedule: what turns a run's peak LR and tokens into its LR area."""

from __future__ import annotations

import numpy as np

from train_entry.optimizer import OptimizerConfig


def lr_mean(schedule: OptimizerConfig, *, steps: int, total_steps: int) -> float:
    """The mean of `schedule`'s LR over its first `steps` of `total_steps` optimizer steps, as a fraction of the
    peak: what turns a trial's (or a full run's) peak LR and tokens into its LR area."""
    if not 0 < steps <= total_steps:
        raise ValueError(f"need 0 < steps <= total_steps, got {steps=}, {total_steps=}")
    return float(np.mean([schedule.lr_at(step, peak_lr=1.0, total_steps=total_steps) for step in range(steps)]))
