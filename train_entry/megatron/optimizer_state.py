"""The distributed optimizer's per-parameter Adam state around a resume, which megatron-core 0.16 leaves to the caller.

Without Transformer Engine or Apex, megatron-core's DistributedOptimizer wraps torch's AdamW and
(1) builds a checkpoint's load request from its current state, reading every parameter's `step`
(`assert len(steps) == 1` in DistributedOptimizer.state_dict), while torch's Adam creates that state
only at its first step: a fresh optimizer cannot even ask for its checkpoint; and (2) hands torch
one `step` tensor shared by all parameters when it loads, which AdamW then advances once per
parameter at every step. Megatron-LM's torch_dist resume meets neither with TE's or Apex's
FusedAdam, whose step lives in the param groups and whose state megatron-core allocates while
loading; its other checkpoint formats create the state before building the request
(MegatronOptimizer.state_dict(is_loading=True) calls the optimizer's init_state_fn, and
megatron-core's FSDP path steps once on zero gradients). We do as the FSDP path does, at LR 0 so
that no weight moves, for torch's AdamW and FusedAdam alike.
"""

from __future__ import annotations

import torch
from megatron.core.optimizer import ChainedOptimizer


def prepare_for_load(optimizer: ChainedOptimizer) -> None:
    """Give every parameter its optimizer state, so that a load request can be built from it."""
    for chained in optimizer.chained_optimizers:
        create_state(chained.optimizer)


def finish_load(optimizer: ChainedOptimizer) -> None:
    """After a load: each parameter's own step count, as torch's Adam keeps them."""
    for chained in optimizer.chained_optimizers:
        untie_steps(chained.optimizer)


def create_state(optimizer: torch.optim.Optimizer) -> None:
    """Create the per-parameter state of a fresh torch optimizer the way its first step does, weights unchanged.

    One step on zero gradients at LR 0: Adam's moments stay zero, and both its update and its
    decoupled weight decay (a factor 1 - LR x decay) are scaled by the LR, so every weight keeps
    its exact value. The LRs and gradients are put back afterwards. An optimizer that has already
    stepped has its state and is left alone.
    """
    if optimizer.state:
        return
    groups = optimizer.param_groups
    lrs = [group["lr"] for group in groups]
    params = [param for group in groups for param in group["params"]]
    try:
        for group in groups:
            group["lr"] = 0.0
        for param in params:
            param.grad = torch.zeros_like(param)
        optimizer.step()
    finally:
        for group, lr in zip(groups, lrs):
            group["lr"] = lr
        for param in params:
            param.grad = None


def untie_steps(optimizer: torch.optim.Optimizer) -> None:
    """Give each parameter's state its own `step` tensor where a load left several sharing one.

    torch's Adam advances every parameter's step in place, so a shared tensor would count one
    optimizer step as many, and the next checkpoint would save that count.
    """
    for state in optimizer.state.values():
        step = state.get("step")
        if torch.is_tensor(step):
            state["step"] = step.clone()
