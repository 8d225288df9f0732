"""The sharded trial on CUDA: FSDP2's mixed precision (fp32 sharded master weights, bf16 compute, fp32 gradients),
and a trial sharded over NCCL workers (two GPUs where the machine has them, else one) measuring what the one-GPU
trial, under bf16 autocast, measures. Skipped without CUDA."""

from __future__ import annotations

import math

import pytest
import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor

from sweep.run.prepare import prepare
from sweep.spec.spec import load_spec
from tests.train_entry.sharded.spawned import ScriptedReport, run_workers
from tests.train_entry.sharded.test_trial import same_on_every_worker
from train_entry.group import Group
from train_entry.loop import next_token_loss
from train_entry.mix import MixRatio
from train_entry.model import Runtime
from train_entry.proxy import run_trial
from train_entry.sharded.fsdp import sharded_causal_lm
from train_entry.trial_config import TrialStatus

pytestmark = pytest.mark.gpu

BF16_TOLERANCE = 0.05
"""Relative, on the losses: the one-GPU trial's autocast keeps the residual stream in fp32, FSDP's bf16 compute does
not, and 40 steps of bf16 rounding (8 bits of mantissa) part the two by about a percent."""


@pytest.fixture(scope="module")
def prepared(tiny_spec_path):
    return prepare(load_spec(tiny_spec_path))


def test_the_sharded_model_keeps_fp32_master_weights_computes_in_bf16_and_reduces_fp32(prepared, tmp_path):
    dist.init_process_group("nccl", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    try:
        runtime = Runtime.for_shard()
        model = sharded_causal_lm(
            str(prepared.base_dir), runtime, Group.default(runtime.device), activation_checkpointing=True
        )
        assert all(isinstance(p, DTensor) and p.dtype is torch.float32 for p in model.parameters())
        outputs = []
        layer = model.model.layers[0].self_attn.q_proj
        handle = layer.register_forward_hook(lambda module, args, output: outputs.append(output.dtype))
        tokens = torch.randint(0, 100, (2, 32), device=runtime.device)
        next_token_loss(model, tokens, tokens).backward()
        handle.remove()
        assert outputs == [torch.bfloat16, torch.bfloat16]  # the forward and its recompute under checkpointing
        assert all(p.grad is not None and p.grad.dtype is torch.float32 for p in model.parameters())
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_trial_sharded_over_nccl_workers_measures_what_one_gpu_does(prepared, tmp_path, compiled):
    config = prepared.trial_config(lr_fraction=0.1, mix=MixRatio(1, 1), output_dir=tmp_path / "one")
    one = run_trial(config, lambda metrics: False)
    workers = min(2, torch.cuda.device_count())
    sharded = same_on_every_worker(
        run_workers(
            config.model_copy(update={"output_dir": str(tmp_path / "sharded"), "compile": compiled}),
            tmp_path / "workers",
            ScriptedReport(tmp_path / "reports"),
            size=workers,
            backend="nccl",
        )
    )
    assert sharded.status is TrialStatus.COMPLETED and [m.step for m in sharded.history] == [
        m.step for m in one.history
    ]
    for ours, theirs in zip(sharded.history, one.history):
        assert math.isfinite(ours.domain_loss) and math.isfinite(ours.general_loss)
        assert ours.domain_loss == pytest.approx(theirs.domain_loss, rel=BF16_TOLERANCE)
        assert ours.general_loss == pytest.approx(theirs.general_loss, rel=BF16_TOLERANCE)
    assert sharded.final.domain_gain > 0
