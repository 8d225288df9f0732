"""The full run's LR schedule: megatron-core's OptimizerParamScheduler, warmup then cosine, resumable."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from train_entry.megatron.config import Optimization
from train_entry.megatron.lr_schedule import build_scheduler

OPTIMIZATION = Optimization(lr=3e-4, min_lr=3e-5, warmup_iters=10, train_iters=110, weight_decay=0.1)


def _optimizer() -> torch.optim.Optimizer:
    # megatron-core's optimizers expose their torch optimizer's param_groups, which is all the
    # scheduler touches; megatron-core builds those only on CUDA.
    return torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))], lr=1.0)


def _lrs(scheduler, optimizer, steps: int) -> list[float]:
    lrs = []
    for _ in range(steps):
        scheduler.step(increment=1)
        lrs.append(optimizer.param_groups[0]["lr"])
    return lrs


def test_warms_up_linearly_then_decays_by_cosine_to_min_lr():
    optimizer = _optimizer()
    scheduler = build_scheduler(optimizer, OPTIMIZATION)
    assert optimizer.param_groups[0]["lr"] == 0.0
    lrs = _lrs(scheduler, optimizer, 120)
    assert lrs[4] == pytest.approx(3e-4 * 5 / 10)
    assert lrs[9] == pytest.approx(3e-4)
    halfway = 10 + 50
    assert lrs[halfway - 1] == pytest.approx(3e-5 + 0.5 * (3e-4 - 3e-5) * (1 + math.cos(math.pi * 0.5)))
    assert lrs[109] == pytest.approx(3e-5) and lrs[119] == pytest.approx(3e-5)
    assert all(a >= b for a, b in itertools.pairwise(lrs[9:]))
    assert optimizer.param_groups[0]["weight_decay"] == pytest.approx(0.1)


def test_a_schedule_restored_twice_in_a_row_follows_the_uninterrupted_curve():
    optimizer = _optimizer()
    uninterrupted = _lrs(build_scheduler(optimizer, OPTIMIZATION), optimizer, 60)
    resumed, saved = [], None
    for steps in (25, 20, 15):  # killed after 25 and after 45 iterations, restored from the saved state each time
        fresh_optimizer = _optimizer()
        scheduler = build_scheduler(fresh_optimizer, OPTIMIZATION)
        if saved is not None:
            scheduler.load_state_dict(saved)
        resumed += _lrs(scheduler, fresh_optimizer, steps)
        saved = scheduler.state_dict()
    assert resumed == pytest.approx(uninterrupted, rel=1e-12)
