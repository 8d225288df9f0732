"""`sweep promote ... --calibrate`: the plan's compute rate measured on a local GPU instead of assumed.

The step-time model divides each layout's FLOPs by the cluster's peak times an MFU that is otherwise
a published figure (assumptions.py). Here the target's own layer runs a few iterations on this
machine's GPU, in the full-run entry's own model code (train_entry.megatron.throughput), with the
micro-batch and recomputation the assumed plan chose, at TP 1; the measured rate replaces the MFU,
and the plan records where, how and on what it was measured. torch and megatron-core load only
when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from sweep.promote.errors import PromotionError
from sweep.promote.estimate.assumptions import Assumptions, Calibration
from sweep.promote.estimate.counts import layer_flops_per_token as model_layer_flops
from sweep.promote.estimate.counts import mlp_flops_per_token
from sweep.promote.request.config import PromotionConfig
from train_entry.megatron.config import ModelShape

if TYPE_CHECKING:
    from sweep.promote.plan.plan import Plan
    from train_entry.megatron.throughput import LayerTiming


def calibrated(run_dir: Path, config: PromotionConfig) -> PromotionConfig:
    """`config` with its MFU replaced by a measurement of the target's layer on this machine's GPU.

    PromotionError without CUDA, or when the layer does not fit or cannot be timed on this GPU.
    """
    import torch

    if not torch.cuda.is_available():
        raise PromotionError(
            "--calibrate times the target's layers on a local CUDA GPU, and this machine has none "
            "(torch.cuda.is_available() is False): run it on a GPU node, or plan without --calibrate "
            "(the estimate then rests on the assumed MFU)"
        )
    from sweep.promote.plan.plan import make_plan
    from train_entry.megatron.throughput import time_layer

    assumed = make_plan(run_dir, config, unconfirmed=True)  # only its layout is used: the point does not matter
    par = assumed.chosen.parallelism
    try:
        timing = time_layer(assumed.target.model, micro_batch_size=par.micro_batch_size, recompute=par.recompute)
    except RuntimeError as error:  # torch.cuda.OutOfMemoryError among them
        raise PromotionError(f"--calibrate could not time one layer of {assumed.target.name}: {error}") from error
    return config.model_copy(update={"assumptions": measured_assumptions(assumed, timing)})


def measured_assumptions(assumed: Plan, timing: LayerTiming) -> Assumptions:
    """The assumed plan's assumptions with its MFU replaced by the rate `timing` measured on the
    plan's micro-batch and recomputation; PromotionError when that exceeds the cluster's peak."""
    model, par, peak = assumed.target.model, assumed.chosen.parallelism, assumed.cluster.peak_bf16_tflops
    tokens = par.micro_batch_size * model.seq_length
    calibration = Calibration(
        card=timing.card,
        attention=timing.attention,
        micro_batch_size=par.micro_batch_size,
        seq_length=model.seq_length,
        recompute=par.recompute,
        seconds_per_layer=timing.seconds_per_layer,
        tflops=layer_flops_per_token(model, par.recompute) * tokens / timing.seconds_per_layer / 1e12,
    )
    source = (
        f"measured by --calibrate on {calibration.card} ({calibration.attention} attention): one "
        f"{assumed.target.name} layer, micro-batch {calibration.micro_batch_size} x {calibration.seq_length}, "
        f"recompute {calibration.recompute}, TP 1, {calibration.seconds_per_layer * 1e3:.1f} ms forward + backward "
        f"= {calibration.tflops:.0f} TFLOP/s"
    )
    fields = {**assumed.assumptions.model_dump(), "mfu": calibration.tflops / peak, "mfu_source": source}
    try:
        return Assumptions.model_validate({**fields, "calibration": calibration.model_dump()})
    except ValidationError as error:
        raise PromotionError(
            f"--calibrate measured {calibration.tflops:.0f} TFLOP/s on {calibration.card}, more than the "
            f"{peak:g} TFLOP/s peak of cluster {assumed.cluster.name}: calibrate on the cluster's own GPU ({error})"
        ) from error


def layer_flops_per_token(model: ModelShape, recompute: str) -> float:
    """One layer's FLOPs per token as the step-time model counts them (counts.layer_flops_per_token), plus what
    recomputation repeats (the whole forward, a third of the total, for full; the MLP's for selective)."""
    one_layer = model.model_copy(update={"num_layers": 1})
    layer = model_layer_flops(model)
    return layer + {"none": 0.0, "selective": mlp_flops_per_token(one_layer) / 3, "full": layer / 3}[recompute]
