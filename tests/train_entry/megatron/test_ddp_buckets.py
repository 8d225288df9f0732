"""The DDP bucket size a run pins, so that a resume at another data-parallel size finds its checkpoint's buckets.

The distributed optimizer's dp_reshardable checkpoint is laid out by gradient bucket, and loading it
asserts that every bucket holds as many parameters as the checkpoint's (megatron-core 0.16.1,
DistributedOptimizer.load_parameter_state_from_dp_reshardable). megatron-core builds its buckets on
CUDA only, so `unpadded_buckets` follows its arithmetic (distributed/param_and_grad_buffer.py,
_ParamAndGradBuffer.__init__), and the gpu-marked test checks it against megatron-core's own buffer.
"""

from __future__ import annotations

import math

import pytest

from sweep.target.families.llama import LLAMA_3_1_8B
from train_entry.megatron.config import FullRunConfig, ModelShape, ddp_bucket_size
from train_entry.megatron.core_configs import core_configs


def unpadded_buckets(numels: list[int], *, bucket_size: int, data_parallel: int) -> list[int]:
    """Parameters per bucket of a distributed-optimizer gradient buffer over parameters of `numels` (in the
    buffer's order), as megatron-core lays it out: backward order, every parameter starting at a multiple of
    64 elements, a bucket closed once it holds bucket_size or more and padded to a multiple of lcm(DP, 128)."""

    def pad(index: int, divisor: int) -> int:
        return math.ceil(index / divisor) * divisor

    counts: list[int] = []
    bucket_start = start = end = 0
    for numel in reversed(numels):
        start = pad(start, 64)
        end = start + numel
        if end - bucket_start >= bucket_size:
            counts.append(end - bucket_start)
            bucket_start = start = pad(end, math.lcm(data_parallel, 128))
        else:
            start = end
    if end > bucket_start:
        counts.append(end - bucket_start)
    return counts


def stage_parameters(shape: ModelShape, *, tensor: int, layers: int) -> list[int]:
    """The embedding and `layers` decoder layers of `shape` as one tensor-parallel rank holds them, in module
    order: each layer's attention output projection, its norm and QKV projection, its norm and gate/up
    projection, and its down projection."""
    h, f, heads = shape.hidden_size, shape.ffn_hidden_size, shape.num_attention_heads
    kv = shape.num_query_groups * h // heads
    layer = [h * h // tensor, h, (h + 2 * kv) * h // tensor, h, 2 * f * h // tensor, f * h // tensor]
    return [shape.vocab_size * h // tensor, *layer * layers]


# Llama 3.1 8B on 480 H100s at TP 2: 240 data-parallel ranks; a relaunch on 59 nodes has 236.
PLANNED_DP, RELAUNCH_DP = 240, 236
EIGHT_B_RANK = stage_parameters(LLAMA_3_1_8B, tensor=2, layers=LLAMA_3_1_8B.num_layers)


def test_megatron_cores_default_bucket_size_changes_the_buckets_with_the_data_parallel_size():
    # What a checkpoint at DP 240 holds against what a relaunch at DP 236 would build, unpinned: megatron-core's
    # assert on per_bucket_numel_unpadded fails the resume.
    planned = unpadded_buckets(EIGHT_B_RANK, bucket_size=ddp_bucket_size(PLANNED_DP), data_parallel=PLANNED_DP)
    relaunch = unpadded_buckets(EIGHT_B_RANK, bucket_size=ddp_bucket_size(RELAUNCH_DP), data_parallel=RELAUNCH_DP)
    assert len(planned) > 1 and len(relaunch) > 1
    assert planned != relaunch


@pytest.mark.parametrize("data_parallel", [RELAUNCH_DP, 120, 60, 15, 1])
def test_with_the_bucket_size_pinned_every_data_parallel_size_builds_the_checkpoints_buckets(data_parallel):
    pinned = ddp_bucket_size(PLANNED_DP)
    planned = unpadded_buckets(EIGHT_B_RANK, bucket_size=pinned, data_parallel=PLANNED_DP)
    assert len(planned) > 1  # several buckets: the padding between them is what differs with DP
    assert unpadded_buckets(EIGHT_B_RANK, bucket_size=pinned, data_parallel=data_parallel) == planned


@pytest.mark.parametrize("data", [None, 15, 12])
def test_the_run_config_not_the_world_size_sets_megatron_cores_bucket_size(full_run_data, data):
    config = FullRunConfig.model_validate(
        full_run_data(tensor=8, pipeline=4, data=data, ddp_bucket_size=ddp_bucket_size(60))
    )
    _, _, ddp = core_configs(config)
    assert ddp.bucket_size == 60_000_000 and ddp.overlap_grad_reduce  # megatron-core keeps a given size
    assert ddp_bucket_size(15) == ddp_bucket_size(40) == 40_000_000  # its own default below 41 ranks


@pytest.mark.gpu
def test_the_arithmetic_gives_megatron_cores_own_buckets(tiny_gpu_shape):
    from train_entry.megatron.throughput import one_gpu_config
    from train_entry.megatron.train import Trainer, single_gpu_job

    config = one_gpu_config(tiny_gpu_shape, micro_batch_size=1, microbatches=1, recompute="none")
    config = config.model_copy(
        update={"parallelism": config.parallelism.model_copy(update={"ddp_bucket_size": 40_000})}
    )
    with single_gpu_job():
        trainer = Trainer(config)
        (buffer,) = trainer.model[0].buffers
        built = [bucket.numel_unpadded for bucket in buffer.buckets]
        expected = unpadded_buckets([param.numel() for param in buffer.params], bucket_size=40_000, data_parallel=1)
        del trainer, buffer
    assert len(built) > 2 and built == expected
