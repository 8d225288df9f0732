"""The full run's LR schedule: megatron-core's OptimizerParamScheduler, counted in iterations."""

from __future__ import annotations

from megatron.core.optimizer import MegatronOptimizer
from megatron.core.optimizer_param_scheduler import OptimizerParamScheduler

from train_entry.megatron.config import Optimization


def build_scheduler(optimizer: MegatronOptimizer, optimization: Optimization) -> OptimizerParamScheduler:
    """Linear warmup from 0 to optimization.lr, then decay to min_lr at train_iters; one step per iteration.

    The scheduler's own state (steps taken, its settings) is saved with every checkpoint and
    restored on resume, so a restarted run continues the curve rather than warming up again.
    """
    return OptimizerParamScheduler(
        optimizer,
        init_lr=0.0,
        max_lr=optimization.lr,
        min_lr=optimization.min_lr,
        lr_warmup_steps=optimization.warmup_iters,
        lr_decay_steps=optimization.train_iters,
        lr_decay_style=optimization.decay_style,
        # A constant weight decay, as in Llama's recipe.
        start_wd=optimization.weight_decay,
        end_wd=optimization.weight_decay,
        wd_incr_steps=optimization.train_iters,
        wd_incr_style="constant",
    )
