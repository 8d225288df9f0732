"""The CUDA path: bf16 autocast, flash-attention 2 when installed, compilation on request. Skipped without CUDA."""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch

from sweep.run.prepare import prepare
from sweep.spec.spec import load_spec
from train_entry.mix import MixRatio
from train_entry.model import Runtime
from train_entry.proxy import run_trial
from train_entry.trial_config import TrialStatus

pytestmark = pytest.mark.gpu


def test_runtime_picks_bf16_and_the_best_attention_kernel():
    runtime = Runtime.detect()
    assert runtime.device.type == "cuda" and runtime.autocast_dtype is torch.bfloat16
    expected = "flash_attention_2" if importlib.util.find_spec("flash_attn") else "sdpa"
    assert runtime.attention == expected


def test_trial_runs_on_cuda(tiny_spec_path, tmp_path):
    prepared = prepare(load_spec(tiny_spec_path))
    result = run_trial(prepared.trial_config(lr_fraction=0.1, mix=MixRatio(1, 1), output_dir=tmp_path), lambda m: False)
    assert result.status is TrialStatus.COMPLETED
    assert all(math.isfinite(m.domain_loss) and math.isfinite(m.general_loss) for m in result.history)
    assert result.final.domain_gain > 0
    # What the trial's GPU allocator held at its most (benchmarks/gpu_sweep.py sums them over trials sharing a GPU).
    assert result.usage.peak_memory_gb > 0 and result.usage.train_tokens == result.tokens_seen


def test_a_compiled_trial_measures_what_an_eager_one_does(tiny_spec_path, tmp_path):
    config = prepare(load_spec(tiny_spec_path)).trial_config(
        lr_fraction=0.1, mix=MixRatio(1, 1), output_dir=tmp_path / "eager"
    )
    compiled = config.model_copy(update={"compile": True, "output_dir": str(tmp_path / "compiled")})
    eager, fused = run_trial(config, lambda m: False).history, run_trial(compiled, lambda m: False).history
    assert [m.step for m in fused] == [m.step for m in eager]
    # Inductor's fused kernels round bf16 where eager PyTorch's separate ones do, and elsewhere: ~1e-3 relative.
    for ours, theirs in zip(fused, eager):
        assert ours.domain_loss == pytest.approx(theirs.domain_loss, rel=0.02)
        assert ours.general_loss == pytest.approx(theirs.general_loss, rel=0.02)
