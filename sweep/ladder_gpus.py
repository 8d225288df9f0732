"""A ladder's plan of GPUs: for each rung, the GPUs one trial takes and how many trials run at once.

A ladder of one model family grows from a rung that fits one GPU (Llama 3.2 1B) to one that does not (Llama 3.1 8B
needs ~145 GB for its weights, gradients and Adam state alone). Each rung's trial takes the GPUs the rung names, or
else the fewest that hold it (sweep.trial_memory.gpus_needed), and the rung runs as many trials at once as its
share of the ladder's GPUs holds: execution.concurrency, and no more than max_gpus // its GPUs per trial.
"""

from __future__ import annotations

from dataclasses import dataclass

from sweep.trial_memory import TrialMemory, gpus_needed, trial_memory
from sweep.trial_scale import TrialScale, trials_at_once
from train_entry.megatron.config import ModelShape
from train_entry.trial_config import ProxyConfig


@dataclass(frozen=True, kw_only=True)
class RungGpus:
    name: str
    gpus: int
    """GPUs per trial."""
    at_once: int
    """Trials at once."""
    memory: TrialMemory
    """One GPU's memory in one of its trials."""

    def line(self) -> str:
        return (
            f"rung {self.name}: {self.memory.params_billion:.2f}B parameters, {self.gpus} GPU(s) per trial, "
            f"{self.at_once} trial(s) at once, {self.memory.total_gb:.1f} GB per GPU"
        )


def rung_gpus(
    name: str,
    shape: ModelShape,
    proxy: ProxyConfig,
    scale: TrialScale,
    *,
    gpus: int | None,
    concurrency: int,
    max_gpus: int | None,
) -> RungGpus:
    """The rung's GPUs per trial (`gpus`, else the fewest that hold it) and trials at once; ValueError naming the
    figures when its trial fits no number of GPUs, or not the number it names."""
    checkpointing = scale.activation_checkpointing
    if gpus is None:
        memory = gpus_needed(shape, batch_size=proxy.batch_size, gpu_memory_gb=scale.gpu_memory_gb,
                             activation_checkpointing=checkpointing)  # fmt: skip
        gpus = memory.workers
    else:
        memory = trial_memory(shape, batch_size=proxy.batch_size, workers=gpus, activation_checkpointing=checkpointing)
        if memory.total_gb > scale.gpu_memory_gb:
            raise ValueError(
                f"rung {name}: {gpus} GPU(s) of {scale.gpu_memory_gb:g} GB do not hold a trial: {memory.line()}"
            )
    rung_scale = scale.model_copy(update={"gpus": float(gpus), "workers": None})
    return RungGpus(
        name=name,
        gpus=gpus,
        at_once=trials_at_once(rung_scale, concurrency=concurrency, max_gpus=max_gpus),
        memory=memory,
    )
