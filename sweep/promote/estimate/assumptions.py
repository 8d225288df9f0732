"""The stated assumptions of the memory and step-time models, each with where its value comes from,
and the measurement that may replace the MFU assumption (`sweep promote --calibrate`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from train_entry.config import StrictConfig

MFU_SOURCE = (
    "Llama 3 Herd of Models (arXiv:2407.21783), Table 4: 43% BF16 MFU (430 TFLOP/s per GPU) training "
    "Llama 3 405B at sequence 8192 on 8,192 H100s with Megatron-style TP 8 x PP 16 x DP 64; "
    "NVIDIA's Megatron-LM README (core_v0.16.1) reports 42-47% MFU on H100 for GPT-3 175B from 96 to 4,608 GPUs"
)


class Calibration(StrictConfig):
    """One decoder layer of the target timed on a local GPU by the full-run entry's own code, at TP 1."""

    card: str
    """The GPU it ran on, as CUDA names it."""
    attention: str
    """The attention kernels that ran: transformer engine, flash-attn 2 or torch sdpa."""
    micro_batch_size: int = Field(gt=0)
    seq_length: int = Field(gt=0)
    recompute: Literal["none", "selective", "full"]
    """The plan's micro-batch and recomputation (its first, assumed-MFU choice), at the target's sequence."""
    seconds_per_layer: float = Field(gt=0.0)
    """Forward and backward of one layer on one micro-batch."""
    tflops: float = Field(gt=0.0)
    """The layer's FLOPs as the step-time model counts them (model FLOPs plus recomputation) over
    that time, in TFLOP/s: the compute rate of the plan in place of peak x the assumed MFU."""


class Assumptions(StrictConfig):
    """What the estimate takes as given rather than computes."""

    mfu: float = Field(0.43, gt=0.0, le=1.0)
    """Fraction of the GPUs' dense bf16 peak that compute runs at. 0.43 is a published measurement
    (see MFU_SOURCE), never fitted to an expected answer; it is applied to compute alone and this
    layout's bubble and exposed communication are added on top, so the estimate errs long (the
    measured figure already includes its own layout's bubble and communication). Put your own
    cluster's measurement here when you have one."""
    memory_reserve_gb: float = Field(6.0, ge=0.0)
    """GB per GPU kept outside the model's tensors: CUDA context and cuBLAS/cuDNN workspaces (~1 GB),
    NCCL buffers of the TP/PP/DP/CP communicators (~1-2 GB), and the caching allocator's
    fragmentation (a few GB at this scale). A planning margin, not a measurement."""
    mfu_source: str = MFU_SOURCE
    """Where mfu comes from, printed with the estimate."""
    calibration: Calibration | None = None
    """None: mfu is the assumption above. Set by `sweep promote --calibrate`: mfu is then the measured
    calibration.tflops over the cluster's peak, and no longer assumed."""
