"""How one rung of a ladder runs its trials: the GPUs each takes and its batch, checked when the spec is read.

A ladder of one model family grows from a rung that fits one GPU (Qwen2.5 0.5B) to one that does not (Qwen2.5 7B
needs ~137 GB for its weights, gradients and Adam state alone). On GPUs (execution.gpus above 0) each rung's trial
takes the GPUs the rung names (`ladder.rungs[i].gpus`), else execution.gpus when they hold it, else the fewest that
do (sweep.spec.trial_memory.gpus_needed); a rung that no count of GPUs holds, or not the count it names, is refused with
the figures when the spec is read. Here, beside the base's own check (sweep.spec.trial_scale), because the spec checks
every rung before any compute; the ladder's own config (sweep.ladder.config) is what it reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from sweep.ladder.config import BuiltinRung, HfRung
from sweep.spec.shapes import builtin_shape, hf_shape
from sweep.spec.trial_memory import gpus_needed
from sweep.spec.trial_scale import TrialScale, check_trial_fits, fits, on_gpus, what_fits
from train_entry.builtin_base import BuiltinBaseConfig
from train_entry.megatron.config import ModelShape
from train_entry.trial_config import ProxyConfig


def rung_shape(rung: BuiltinRung | HfRung, builtin: BuiltinBaseConfig | None, seq_len: int) -> ModelShape | None:
    """A rung's model shape: a built-in rung's is base.builtin's with the rung's own width and depth."""
    if isinstance(rung, HfRung):
        return hf_shape(rung.model, seq_len)
    if builtin is None:
        return None  # refused by the spec: built-in rungs need the built-in base
    return builtin_shape(rung, vocab_size=builtin.vocab_size, seq_len=seq_len)


@dataclass(frozen=True)
class RungTrial:
    """How one rung's trials run: the GPUs each takes and its batch."""

    gpus: float
    batch_size: int


def rung_trial(
    index: int,
    rung: BuiltinRung | HfRung,
    batch_size: int,
    scale: TrialScale,
    proxy: ProxyConfig,
    builtin: BuiltinBaseConfig | None,
) -> RungTrial:
    """GPUs per trial of the ladder's rung `index` and its batch: `batch_size` (the rung's share of the proxy's,
    LadderConfig.batch_sizes) rounded up to a multiple of the workers the rung names (or execution's), each of which
    trains an equal part of it. ValueError naming the rung's key and the figures when no GPUs hold its trial, or not
    those it names."""
    named = rung.gpus if isinstance(rung, HfRung) else None
    workers = on_gpus(scale, named).trial_workers if named is not None else scale.trial_workers
    batch_size = -(-batch_size // workers) * workers
    base = f"rung {rung.name} ({rung.model})" if isinstance(rung, HfRung) else f"rung {rung.name}"
    sized = proxy.model_copy(update={"batch_size": batch_size})
    shape = rung_shape(rung, builtin, proxy.seq_len)
    gpus = rung_trial_gpus(scale, sized, shape, named=named, key=f"ladder.rungs.{index}.gpus", base=base)
    return RungTrial(gpus=gpus, batch_size=batch_size)


def rung_trial_gpus(
    scale: TrialScale, proxy: ProxyConfig, shape: ModelShape | None, *, named: int | None, key: str, base: str
) -> float:
    """GPUs per trial of one rung, whose own setting is `key` (`named`, None when left out); ValueError naming the
    key and the figures when its trial fits no number of GPUs, or not the number it names."""
    if scale.gpus == 0:
        if named is not None:
            raise ValueError(
                f"{key} = {named}: a rung's GPUs apply to trials on GPUs, and execution.gpus is 0 (every trial on "
                "CPU); set execution.gpus, or remove it"
            )
        return 0.0
    if named is not None:
        check_trial_fits(on_gpus(scale, named), proxy, shape, base=base, key=key)
        return float(named)
    if shape is None or fits(scale, proxy, shape):
        check_trial_fits(scale, proxy, shape, base=base)
        return scale.gpus
    try:
        needed = gpus_needed(shape, batch_size=proxy.batch_size, gpu_memory_gb=scale.gpu_memory_gb,
                             activation_checkpointing=scale.activation_checkpointing)  # fmt: skip
    except ValueError as exc:
        raise ValueError(f"{key}: {base}: {exc}; {what_fits(scale, proxy, shape, key=key)}") from None
    check_trial_fits(on_gpus(scale, needed.workers), proxy, shape, base=base, key=key)
    return float(needed.workers)
