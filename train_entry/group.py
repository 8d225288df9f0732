"""The processes that train one trial together: one process, or the workers of a sharded trial.

A sharded trial's workers share torch.distributed's default process group (started by whoever
launched them: Ray Train's TorchTrainer in a sweep, torchrun in a benchmark). The training loop
asks this group three things: the mean of a per-worker figure, the sum of a tensor, and a decision
that rank 0 takes and every worker follows (whether a report stopped the trial). A group of one
answers each without a collective, so a one-process trial pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Group:
    rank: int
    size: int
    device: torch.device
    """Where collectives put their tensors: the worker's GPU under NCCL, the CPU under gloo."""

    @classmethod
    def single(cls) -> Group:
        return cls(rank=0, size=1, device=torch.device("cpu"))

    @classmethod
    def default(cls, device: torch.device) -> Group:
        """torch.distributed's default group, which the caller has initialised."""
        if not dist.is_initialized():
            raise RuntimeError("a sharded trial runs in a torch.distributed process group; none is initialised")
        return cls(rank=dist.get_rank(), size=dist.get_world_size(), device=device)

    @property
    def is_leader(self) -> bool:
        return self.rank == 0

    def mean(self, value: torch.Tensor) -> float:
        """The mean over the workers of a scalar each holds (each worker's loss over equally many tokens)."""
        if self.size == 1:
            return value.item()
        return self.total(value.detach().to(self.device, torch.float64)).item() / self.size

    def total(self, value: torch.Tensor) -> torch.Tensor:
        """The element-wise sum over the workers (gloo has no average reduction, NCCL and gloo both sum)."""
        if self.size == 1:
            return value
        summed = value.to(self.device).clone()
        dist.all_reduce(summed, op=dist.ReduceOp.SUM)
        return summed

    def decide(self, decision: Callable[[], bool]) -> bool:
        """`decision()` taken on rank 0 alone, its answer given to every worker: a report is made once, and
        a trial it stops stops on every worker at the same step."""
        if self.size == 1:
            return decision()
        flag = torch.tensor([int(decision()) if self.is_leader else 0], device=self.device)
        dist.broadcast(flag, src=0)
        return bool(flag.item())

    def share(self, value: object) -> object:
        """Rank 0's `value`, on every worker (a small picklable object, e.g. which checkpoint to resume)."""
        if self.size == 1:
            return value
        box = [value if self.is_leader else None]
        dist.broadcast_object_list(box, src=0, device=self.device)
        return box[0]
