"""A ladder's GPUs on the cluster it runs on: for each rung, the GPUs one trial takes (sweep/spec/rung_trial.py, checked
when the spec is read) and how many trials run at once: execution.concurrency, and no more than its GPUs // the rung's
GPUs per trial. A rung whose trial takes more GPUs than the cluster has is refused before the first rung runs, not
hours later when its turn comes.
"""

from __future__ import annotations

from dataclasses import dataclass

from sweep.run.trial_slots import ClusterTooSmall
from sweep.spec.trial_memory import TrialMemory
from sweep.spec.trial_scale import (
    TrialScale,
    trial_size,
    trials_at_once,
)
from train_entry.megatron.config import ModelShape
from train_entry.trial_config import ProxyConfig


@dataclass(frozen=True, kw_only=True)
class RungGpus:
    """One line of a ladder's plan."""

    name: str
    gpus: float
    """GPUs per trial."""
    at_once: int
    """Trials at once; at most that many, when the cluster's GPUs are not known yet."""
    cluster_known: bool
    memory: TrialMemory | None
    """One GPU's memory in one of its trials; None for a base whose config.json gives no shape."""

    def line(self) -> str:
        size = "" if self.memory is None else f"{self.memory.params_billion:.2f}B parameters, "
        per_gpu = "" if self.memory is None else f", {self.memory.total_gb:.1f} GB per GPU"
        at_once = f"{'' if self.cluster_known else 'at most '}{self.at_once} trial(s) at once"
        return f"rung {self.name}: {size}{self.gpus:g} GPU(s) per trial, {at_once}{per_gpu}"


def rung_gpus(
    name: str,
    shape: ModelShape | None,
    proxy: ProxyConfig,
    scale: TrialScale,
    *,
    concurrency: int,
    max_gpus: int | None,
) -> RungGpus:
    """The plan of a rung whose trials run as `scale` says, on a cluster of `max_gpus` GPUs (None: not known);
    ClusterTooSmall when one of its trials takes more."""
    if max_gpus is not None and scale.gpus > max_gpus:
        raise ClusterTooSmall(
            f"rung {name}: a trial takes {scale.gpus:g} GPU(s) and the Ray cluster has {max_gpus}; run the ladder on "
            "a machine or cluster (--address) with more"
        )
    return RungGpus(
        name=name,
        gpus=scale.gpus,
        at_once=trials_at_once(scale, concurrency=concurrency, max_gpus=max_gpus),
        cluster_known=max_gpus is not None,
        memory=None if shape is None else trial_size(scale, proxy, shape),
    )
