"""The entry's own training iteration timed on this GPU over random tokens, in a job of one process.

What benchmarks/full_run_gpu.py reports and what `sweep promote plan --calibrate` puts in place of the
plan's MFU assumption: the Trainer that train() runs (megatron-core's model, DDP, distributed
optimizer and pipeline schedule), fed random token batches so that no corpus or tokenizer is needed.
"""

from __future__ import annotations

import functools
import gc
import itertools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch

from train_entry.megatron.attention import attention_backend
from train_entry.megatron.config import FullRunConfig, ModelShape
from train_entry.megatron.data import Sample
from train_entry.megatron.train import Trainer, single_gpu_job

SAMPLE_BATCHES = 4
"""Distinct random micro-batches cycled through: the data's content does not change the work."""
CALIBRATION_VOCAB = 1024
"""Vocabulary of the models a layer is timed in: the output layer and loss are cancelled out by the
difference of two layer counts, and a small one keeps a 405B-wide layer pair within one GPU."""


@dataclass(frozen=True)
class IterationTiming:
    median_s: float
    """Median wall time of the timed iterations, CUDA synchronised before and after each."""
    optimizer_median_s: float | None
    """Of each iteration, the median time of the optimizer's and the LR schedule's step; None without them."""
    parameters: int
    """Parameters of this rank's model chunks: what the optimizer steps."""
    peak_memory_gb: float
    """torch.cuda.max_memory_allocated over building and running, in GB (1e9 bytes)."""
    attention: str
    """The attention kernels that ran (train_entry.megatron.attention.attention_backend)."""


@dataclass(frozen=True)
class LayerTiming:
    seconds_per_layer: float
    """Forward and backward of one decoder layer on one micro-batch (the entry's fp32 gradient
    accumulation included, the optimizer step not: the step-time model's compute is the layers' work)."""
    card: str
    """torch.cuda.get_device_name()."""
    attention: str


def one_gpu_config(
    shape: ModelShape, *, micro_batch_size: int, microbatches: int, recompute: Literal["none", "selective", "full"]
) -> FullRunConfig:
    """A run of `shape` on one GPU (TP, PP, CP 1): `microbatches` micro-batches per iteration; the data
    and checkpoint paths are never read by a Trainer."""
    return FullRunConfig(
        model=shape,
        parallelism={
            "micro_batch_size": micro_batch_size,
            "global_batch_size": micro_batch_size * microbatches,
            "recompute": recompute,
        },
        optimization={"lr": 1e-4, "min_lr": 1e-5, "warmup_iters": 1, "train_iters": 1000},
        data={"blend": [{"weight": 1.0, "prefix": "unused"}], "tokenizer": "unused"},
        checkpoint={"save_dir": "unused", "save_interval": 1000},
    )


def time_iterations(config: FullRunConfig, *, iterations: int, warmup: int, optimizer_step: bool) -> IterationTiming:
    """Time a Trainer of `config` on this GPU: gradients() then, with optimizer_step, apply_gradients(), each
    timed apart (the iteration's time is their sum).

    The first `warmup` iterations (CUDA and torch.compile warm-up) are not timed. Frees the GPU
    memory it took before returning.
    """
    torch.cuda.reset_peak_memory_stats()
    with single_gpu_job():
        trainer = Trainer(config)
        batches = [random_micro_batch(config, seed, trainer.device) for seed in range(SAMPLE_BATCHES)]
        iterators = [itertools.cycle(batches) if reads else None for reads in trainer.reads_data]
        steps = [functools.partial(trainer.gradients, iterators)]
        if optimizer_step:
            steps.append(trainer.apply_gradients)
        seconds: list[list[float]] = []
        for index in range(warmup + iterations):
            timed = [_synchronised_seconds(step) for step in steps]
            if index >= warmup:
                seconds.append(timed)
        attention = attention_backend(transformer_engine=trainer.transformer_engine)
        parameters = sum(param.numel() for chunk in trainer.model for param in chunk.parameters())
        del trainer, batches, iterators, steps
    gc.collect()  # megatron-core's DDP and optimizer hold reference cycles to the parameters
    peak = torch.cuda.max_memory_allocated() / 1e9
    torch.cuda.empty_cache()
    return IterationTiming(
        median_s=statistics.median(sum(parts) for parts in seconds),
        optimizer_median_s=statistics.median(parts[1] for parts in seconds) if optimizer_step else None,
        parameters=parameters,
        peak_memory_gb=peak,
        attention=attention,
    )


def _synchronised_seconds(step: Callable[[], object]) -> float:
    torch.cuda.synchronize()
    started = time.perf_counter()
    step()
    torch.cuda.synchronize()
    return time.perf_counter() - started


def time_layer(
    shape: ModelShape,
    *,
    micro_batch_size: int,
    recompute: Literal["none", "selective", "full"],
    microbatches: int = 4,
    iterations: int = 3,
    warmup: int = 2,
) -> LayerTiming:
    """Seconds of one layer of `shape` (its width, heads and sequence) per micro-batch, forward and backward.

    The difference between models of two layers and of one, over the micro-batches of an
    iteration: what both share (embedding, output layer, loss, per-iteration overhead) cancels.
    """
    timings = [
        time_iterations(
            one_gpu_config(
                shape.model_copy(update={"num_layers": layers, "vocab_size": CALIBRATION_VOCAB}),
                micro_batch_size=micro_batch_size,
                microbatches=microbatches,
                recompute=recompute,
            ),
            iterations=iterations,
            warmup=warmup,
            optimizer_step=False,
        )
        for layers in (1, 2)
    ]
    seconds = (timings[1].median_s - timings[0].median_s) / microbatches
    if seconds <= 0:
        raise RuntimeError(
            f"a 2-layer model was not slower than a 1-layer one ({timings[1].median_s:.4f} s vs "
            f"{timings[0].median_s:.4f} s per iteration): the GPU is busy with other work, or the layer is too small to time"
        )
    return LayerTiming(seconds_per_layer=seconds, card=torch.cuda.get_device_name(), attention=timings[0].attention)


def random_micro_batch(config: FullRunConfig, seed: int, device: torch.device) -> Sample:
    """One micro-batch of uniformly random tokens, every token counted in the loss, as GPTDataset lays it out."""
    par, model = config.parallelism, config.model
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(model.vocab_size, (par.micro_batch_size, model.seq_length + 1), generator=generator)
    positions = torch.arange(model.seq_length).expand(par.micro_batch_size, -1)
    return {
        "tokens": tokens[:, :-1].contiguous().to(device),
        "labels": tokens[:, 1:].contiguous().to(device),
        "loss_mask": torch.ones(par.micro_batch_size, model.seq_length, device=device),
        "position_ids": positions.contiguous().to(device),
    }
