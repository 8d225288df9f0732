"""How a sweep's trials take their share of the Ray cluster: what Ray Tune books for each trial, and how many run
at once.

A one-process trial is its Tune trial: the trial books its CPUs and GPUs (a fraction shares a GPU). A sharded trial
is a Ray Train job run from its Tune trial (sweep.run.sharded_job); as Ray's guide to Train inside Tune prescribes, the
Tune trial is only the job's driver and books DRIVER_CPUS, the job books its workers' CPUs and GPUs when it starts,
and Tune's max_concurrent_trials keeps no more trials running than the cluster holds, so that no trial's driver
waits on GPUs another trial's workers hold. Trials at once: execution.concurrency, and no more than the cluster's
GPUs (and CPUs) over a trial's. A trial larger than the whole cluster would wait forever: it is refused before
anything is prepared.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from sweep.spec.trial_scale import TrialScale, trials_at_once

DRIVER_CPUS = 1
"""A sharded trial's Tune trial: it waits on its job and answers rank 0's reports (a study write and the pruner
per evaluation). Ray's default for a Tune trial."""


class ClusterTooSmall(Exception):
    """A trial needs more GPUs or CPUs than the Ray cluster has."""


def trial_cpus(scale: TrialScale) -> int:
    """CPU slots one trial takes: its own, or its driver's and each worker's."""
    return DRIVER_CPUS + scale.trial_workers * scale.cpus if scale.sharded else scale.cpus


def tune_resources(scale: TrialScale) -> dict[str, float]:
    """What Ray Tune books for each trial (tune.with_resources)."""
    if scale.sharded:
        return {"cpu": DRIVER_CPUS, "gpu": 0}
    return {"cpu": scale.cpus, "gpu": scale.gpus}


def local_gpus() -> int:
    """The GPUs this machine's torch sees (CUDA_VISIBLE_DEVICES included): what a Ray of our own is given."""
    import torch  # imported here: a sweep of CPU trials never loads torch in its driver

    return torch.cuda.device_count()


@dataclass(frozen=True, kw_only=True)
class TrialSlots:
    resources: dict[str, float]
    """Booked by Ray Tune for each trial."""
    at_once: int
    """Tune's max_concurrent_trials."""
    cluster_gpus: float
    cluster_cpus: float

    def line(self, scale: TrialScale) -> str:
        """What each trial runs on and why so many at once, for the sweep's first lines."""
        if scale.sharded:
            device = f"{scale.trial_workers} GPUs" if scale.gpus else f"{scale.trial_workers} CPU workers (gloo)"
            each = f"a Ray Train job of {device}, its model sharded with FSDP2"
        else:
            each = f"{scale.gpus:g} GPU(s)" if scale.gpus else f"{scale.cpus} CPU(s)"
        return (
            f"trials: {self.at_once} at once, each {each}; the Ray cluster has {self.cluster_gpus:g} GPU(s) and "
            f"{self.cluster_cpus:g} CPU(s)"
        )


def trial_slots(scale: TrialScale, *, concurrency: int, cluster: Mapping[str, float]) -> TrialSlots:
    """Tune's resources per trial and trials at once on a cluster of `cluster` resources (ray.cluster_resources());
    ClusterTooSmall naming the figures when not even one trial fits it."""
    gpus, cpus = cluster.get("GPU", 0.0), cluster.get("CPU", 0.0)
    if scale.gpus > gpus:
        raise ClusterTooSmall(
            f"execution.gpus = {scale.gpus:g}: a trial takes {scale.gpus:g} GPU(s) and the Ray cluster has {gpus:g}; "
            "run on a machine or cluster (--address) with more, or lower the GPUs per trial"
        )
    needed = trial_cpus(scale)
    if needed > cpus:
        raise ClusterTooSmall(
            f"a trial takes {needed} CPU(s) (execution.cpus = {scale.cpus} per worker, {scale.trial_workers} "
            f"worker(s)) and the Ray cluster has {cpus:g}; lower execution.cpus or execution.workers"
        )
    by_gpus = trials_at_once(scale, concurrency=concurrency, max_gpus=math.floor(gpus) if scale.gpus else None)
    return TrialSlots(
        resources=tune_resources(scale),
        at_once=max(1, min(by_gpus, math.floor(cpus / needed))),
        cluster_gpus=gpus,
        cluster_cpus=cpus,
    )
