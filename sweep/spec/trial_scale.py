"""How large one trial is: the workers it runs on and whether its base fits them (the spec's `execution` settings
that size a trial, and their checks).

A trial of one worker is the one-process trial of train_entry.proxy, on a CPU slot or a GPU (or a share of one).
`execution.gpus` above 1, or `execution.workers` above 1 on CPU, makes each trial a Ray Train job of that many
workers with the model sharded over them by FSDP2 (sweep.run.sharded_job, train_entry.sharded). Whether the trial fits
its GPUs follows from the base's shape, the proxy's batch and sequence length and one GPU's memory
(sweep.spec.trial_memory); trials that share a GPU (execution.gpus below 1: four at 0.25, as many as
execution.concurrency lets run) must fit its memory together. A spec whose trials do not fit is refused with the figures
and the settings that would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import Field, model_validator

from sweep.spec.trial_memory import MAX_WORKERS, TrialMemory, gpus_needed, trial_memory
from train_entry.config import StrictConfig
from train_entry.megatron.config import ModelShape
from train_entry.trial_config import ProxyConfig

DEFAULT_GPU_MEMORY_GB = 80.0
"""An H100 SXM's 80 GB (sweep.promote.estimate.clusters' preset): the card the reference recipe ran on."""
SHARE_TOLERANCE = 1e-6
"""1 / 0.1 is 9.999...: Ray counts GPU shares to four decimals, so a hair under a whole share is one."""


@dataclass(frozen=True, kw_only=True)
class Workers:
    """What a sharded trial's Ray Train job runs on (sweep.run.sharded_job)."""

    count: int
    gpus: bool
    """One GPU per worker (NCCL), or none (gloo on CPU)."""
    cpus: int
    """CPU slots per worker, also its torch threads."""
    max_failures: int
    """Restarts of the worker group after a failure, each resuming from the trial's checkpoint."""


class TrialScale(StrictConfig):
    """What one trial runs on: CPU slots, GPUs, workers; how it keeps its memory down and its place."""

    cpus: int = Field(1, ge=1, le=1024)
    """CPUs per trial (per worker, in a trial of several); also torch's thread count in each."""
    gpus: float = Field(0, ge=0, le=MAX_WORKERS)
    """GPUs per trial; a fraction shares one GPU between trials (0.5: two trials per GPU). Above 1, a whole number:
    the trial is a Ray Train job of one worker per GPU, its model sharded over them (FSDP2)."""
    workers: int | None = Field(None, ge=1, le=MAX_WORKERS)
    """Processes per trial. Left out: one per GPU, or one on CPU. Above 1 on CPU (gpus 0), each trial is a Ray Train
    job of that many workers sharding the model over gloo; with GPUs it can only say what gpus says."""
    activation_checkpointing: bool = False
    """Keep only each decoder layer's input and recompute the rest in the backward: about a third more compute, for
    a base whose activations at the proxy's batch and sequence length do not fit beside its weights."""
    compile: bool = False
    """torch.compile each decoder layer (regional compilation) and the loss: faster GPU steps for a compilation of
    seconds at each trial's start, cached on disk for the trials after it."""
    checkpoint_interval: int | None = Field(None, gt=0)
    """A sharded trial's steps between the checkpoints a restarted worker group resumes from, a multiple of
    proxy.eval_interval; default every evaluation. Each writes 12 bytes per parameter (fp32 weights, Adam)."""
    gpu_memory_gb: float = Field(DEFAULT_GPU_MEMORY_GB, gt=0.0, le=100_000.0)
    """One GPU's memory in GB (1e9 bytes), as the vendor states it: what a trial's size is checked against."""

    @model_validator(mode="after")
    def _workers_match_gpus(self) -> TrialScale:
        if self.gpus > 1 and not float(self.gpus).is_integer():
            raise ValueError(f"gpus above 1 takes whole GPUs, one per worker of the trial, got gpus={self.gpus:g}")
        if self.workers is None or self.workers == 1:
            return self
        if 0 < self.gpus < 1:
            raise ValueError(f"a trial of {self.workers} workers takes a whole GPU per worker, got gpus={self.gpus:g}")
        if self.gpus >= 1 and self.workers != self.gpus:
            raise ValueError(
                f"with GPUs a trial runs one worker per GPU: workers ({self.workers}) must equal gpus "
                f"({self.gpus:g}), or be left out"
            )
        return self

    @property
    def trial_workers(self) -> int:
        if self.workers is not None:
            return self.workers
        return int(self.gpus) if self.gpus >= 1 else 1

    @property
    def sharded(self) -> bool:
        return self.trial_workers > 1

    def job_workers(self, *, max_retries: int) -> Workers:
        """A sharded trial's Ray Train workers; a failed group is restarted max_retries times."""
        return Workers(count=self.trial_workers, gpus=self.gpus >= 1, cpus=self.cpus, max_failures=max_retries)


def check_trial_fits(
    scale: TrialScale,
    proxy: ProxyConfig,
    shape: ModelShape | None,
    *,
    base: str,
    key: str = "execution.gpus",
    concurrency: int | None = None,
) -> None:
    """ValueError naming the keys and figures unless a trial of `shape` splits and fits as `scale` says; `key` is
    the setting that gave scale.gpus (a ladder's rung may name its own), `concurrency` the trials run at once (None:
    as many as share a GPU, see trials_per_gpu).

    `shape` None (a base whose config names no Llama-family shape) skips the memory check.
    """
    workers = scale.trial_workers
    if proxy.batch_size % workers:
        raise ValueError(
            f"proxy.batch_size ({proxy.batch_size}) must be a multiple of a trial's {workers} workers ({key} "
            "or execution.workers): each trains on an equal part of every batch"
        )
    interval = scale.checkpoint_interval
    if interval is not None and interval % proxy.eval_interval:
        raise ValueError(
            f"execution.checkpoint_interval ({interval}) must be a multiple of proxy.eval_interval "
            f"({proxy.eval_interval}): a checkpoint follows its evaluation's report"
        )
    if scale.gpus == 0 or shape is None:
        return  # a CPU trial's memory is the machine's, not a GPU's
    if 0 < scale.gpus < 1:
        check_shared_gpu(scale, proxy, shape, base=base, key=key, concurrency=concurrency)
        return
    if fits(scale, proxy, shape):
        return
    raise ValueError(f"{key} = {scale.gpus:g}: a trial of {base} needs {trial_size(scale, proxy, shape).line()}, "
                     f"over the {gpu_capacity(scale):g} GB it has (execution.gpu_memory_gb); "
                     f"{what_fits(scale, proxy, shape, key=key)}")  # fmt: skip


def trials_per_gpu(scale: TrialScale, *, concurrency: int | None = None) -> int:
    """Trials that share one GPU at once: 1 on whole GPUs; with a fraction, as many as its shares fill (Ray packs
    fractional trials onto one GPU: 4 at gpus 0.25, 3 at 0.3) and no more than `concurrency` run (None: not known,
    the most)."""
    if not 0 < scale.gpus < 1:
        return 1
    most = math.floor(1 / scale.gpus + SHARE_TOLERANCE)
    return most if concurrency is None else max(1, min(most, concurrency))


def gpu_capacity(scale: TrialScale) -> float:
    """GB of one GPU a trial has: all of it, or its part when as many trials as its share allows run on it (gpus
    0.25: a quarter)."""
    return scale.gpu_memory_gb / trials_per_gpu(scale)


def fits(scale: TrialScale, proxy: ProxyConfig, shape: ModelShape) -> bool:
    """Whether one GPU's memory in a trial as `scale` runs it is within what the trial has of a GPU."""
    return trial_size(scale, proxy, shape).total_gb <= gpu_capacity(scale)


def check_shared_gpu(
    scale: TrialScale, proxy: ProxyConfig, shape: ModelShape, *, base: str, key: str, concurrency: int | None
) -> None:
    """ValueError with the figures unless the trials sharing one GPU (gpus below 1) fit its memory together: each
    process holds its own weights, Adam state, activations and CUDA context, so n trials need n times one's."""
    sharing = trials_per_gpu(scale, concurrency=concurrency)
    size = trial_size(scale, proxy, shape)
    if sharing * size.total_gb <= scale.gpu_memory_gb:
        return
    at_once = "" if concurrency is None else f" (execution.concurrency {concurrency})"
    instead = _what_shares(scale, proxy, shape, key=key)
    raise ValueError(
        f"{key} = {scale.gpus:g}: {sharing} trials of {base} at once share one GPU{at_once}, each needing "
        f"{size.line()}: {sharing} x {size.total_gb:.1f} = {sharing * size.total_gb:.1f} GB, over the "
        f"{scale.gpu_memory_gb:g} GB of one GPU (execution.gpu_memory_gb); {instead}"
    )


def _what_shares(scale: TrialScale, proxy: ProxyConfig, shape: ModelShape, *, key: str) -> str:
    """The settings that would hold trials sharing a GPU: fewer of them on it, or a GPU (or more) each."""
    most = math.floor(scale.gpu_memory_gb / trial_size(scale, proxy, shape).total_gb)
    if most >= 2:
        # Rounded down to Ray's four decimals: 0.3333 packs 3 trials on a GPU, where 0.34 would pack 2.
        share = math.floor(1e4 / most) / 1e4
        return f"{most} fit one GPU: set {key}: {share:g}, or execution.concurrency: {most}"
    return what_fits(scale.model_copy(update={"gpus": 1.0}), proxy, shape, key=key)


def what_fits(scale: TrialScale, proxy: ProxyConfig, shape: ModelShape, *, key: str) -> str:
    """The setting `key` that would hold a trial that does not fit, or what to change when no count of GPUs does."""
    try:
        needed = gpus_needed(shape, batch_size=proxy.batch_size, gpu_memory_gb=scale.gpu_memory_gb,
                             activation_checkpointing=scale.activation_checkpointing)  # fmt: skip
    except ValueError:
        advice = "lower proxy.batch_size or proxy.seq_len"
        if not scale.activation_checkpointing:
            advice += ", or set execution.activation_checkpointing: true"
        return f"no number of GPUs up to {MAX_WORKERS} holds it: {advice}"
    held = "1 GPU holds it" if needed.workers == 1 else f"{needed.workers} GPUs hold it"
    return f"{held} ({needed.total_gb:.1f} GB each): set {key}: {needed.workers}"


def trial_size(scale: TrialScale, proxy: ProxyConfig, shape: ModelShape) -> TrialMemory:
    """One GPU's memory in a trial as `scale` runs it."""
    return trial_memory(shape, batch_size=proxy.batch_size, workers=scale.trial_workers,
                        activation_checkpointing=scale.activation_checkpointing)  # fmt: skip


def on_gpus(scale: TrialScale, gpus: float) -> TrialScale:
    """`scale` with `gpus` per trial, one worker per GPU."""
    return scale.model_copy(update={"gpus": float(gpus), "workers": None})


def trials_at_once(scale: TrialScale, *, concurrency: int, max_gpus: int | None) -> int:
    """Trials a sweep runs at once: `concurrency`, and no more than `max_gpus` GPUs hold together."""
    if max_gpus is None or scale.gpus == 0:
        return concurrency
    return max(1, min(concurrency, math.floor(max_gpus / scale.gpus)))
