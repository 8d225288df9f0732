"""The distributed optimizer's per-parameter Adam state around a resume, which megatron-core 0.16 leaves to the caller.

Without Transformer Engine or Apex, megatron-core's DistributedOptimizer wraps torch's AdamW and
(1) builds a checkpoint's load request from its current state, reading every parameter's `step`
(`assert len(steps) == 1` in DistributedOptimizer.state_dict), while torch's Adam creates that state
only at its first step: a fresh optimizer cannot even ask for its checkpoint; (2) hands torch one
`step` tensor shared by all parameters when it loads, which AdamW then advances once per parameter
at every step; and (3) loses the checkpoint's step count in the dp_reshardable format: the request
wraps each parameter's `step` as it was in the fresh optimizer (a LocalNonpersistentObject, "not
stored, restored locally"), DistributedOptimizer.load_state_dict sets the checkpoint's count from
its param groups, and then load_parameter_state_from_dp_reshardable copies every key of the
request's state into the optimizer's (`dst_tensors[key].copy_(tensors[key])`), `step` included, so
the fresh optimizer's 1 overwrites it. With betas (0.9, 0.95) the first update after a resume would
then be ~1.6x too large, and every later checkpoint would store the wrong count.
Megatron-LM's torch_dist resume meets none of this with TE's or Apex's FusedAdam, whose step lives in
the param groups and whose state megatron-core allocates while loading; its other checkpoint formats
create the state before building the request (MegatronOptimizer.state_dict(is_loading=True) calls
the optimizer's init_state_fn, and megatron-core's FSDP path steps once on zero gradients). We do as
the FSDP path does, at LR 0 so that no weight moves, and after the load give every parameter its own
step tensor holding the count the param groups kept from the checkpoint.
"""

from __future__ import annotations

import torch
from megatron.core.optimizer import ChainedOptimizer


def prepare_for_load(optimizer: ChainedOptimizer) -> None:
    """Give every parameter its optimizer state, so that a load request can be built from it."""
    for chained in optimizer.chained_optimizers:
        create_state(chained.optimizer)


def finish_load(optimizer: ChainedOptimizer) -> None:
    """After megatron-core's load: each parameter's own step tensor holding the checkpoint's count."""
    for chained in optimizer.chained_optimizers:
        restore_steps(chained.optimizer)


def step_count(optimizer: ChainedOptimizer) -> int:
    """The optimizer steps Adam's bias correction counts, the same for every parameter; 0 before the first.

    torch's Adam keeps it per parameter in its state, TE's and Apex's FusedAdam per param group.
    """
    counts = set()
    for chained in optimizer.chained_optimizers:
        inner = chained.optimizer
        for group in inner.param_groups:
            for param in group["params"]:
                step = inner.state.get(param, {}).get("step", group.get("step"))
                if step is not None:
                    counts.add(int(step))
    if len(counts) > 1:
        raise RuntimeError(f"the parameters' Adam step counts differ: {sorted(counts)}")
    return counts.pop() if counts else 0


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


def restore_steps(optimizer: torch.optim.Optimizer) -> None:
    """Give each parameter's state its own `step` tensor holding the count of its param group.

    DistributedOptimizer.load_state_dict leaves the checkpoint's count in every param group (torch's
    load_state_dict keeps the group's keys) but, through its dp_reshardable copy, the fresh
    optimizer's count in the one tensor all parameters share. Separate tensors, because torch's Adam
    advances every parameter's step in place: a shared one would count one optimizer step as many.
    FusedAdam keeps no per-parameter step and is left alone.
    """
    for group in optimizer.param_groups:
        for param in group["params"]:
            state = optimizer.state.get(param, {})
            step = state.get("step")
            if not torch.is_tensor(step):
                continue
            if "step" not in group:
                raise RuntimeError("a loaded param group has no step count: not a checkpoint of torch's Adam")
            state["step"] = torch.tensor(float(group["step"]), dtype=step.dtype, device=step.device)
