"""benchmarks/proxy_trial_gpu.py on what a CPU machine can check: a measured path becomes the row gpu_check reads,
its figures set beside the memory estimate the tool sizes trials by; without CUDA it exits with code 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import proxy_trial_gpu as benchmark
from gpu_check_summary import PROXY_JSON, _proxy


def test_a_measured_path_is_a_row_with_its_mfu_its_peak_and_the_estimate_gpu_check_reads(tmp_path):
    measured = benchmark.row("one GPU", 1, benchmark.Measured(47_000.0, 49_000.0, 41.23), 989.0)
    assert measured.trial_mfu == pytest.approx(
        47_000 * benchmark.model_flops_per_token(benchmark.LLAMA_3_2_1B) / 989e12
    )
    # The one-GPU trial of the 1B model at 4 x 2048 tokens: the ~54 GB the benchmark's docstring names.
    assert measured.estimate_gb == pytest.approx(54.0, abs=0.5)
    assert benchmark.estimate_gb(8) < measured.estimate_gb  # sharded over 8, each GPU holds less
    assert benchmark.table_row(measured) == "| one GPU | 1 | 47,000 | 49,000 | 0.96 | 39.1% | 40.7% | 41.2 (54.0) |"
    assert benchmark.table_row(measured).count("|") == benchmark.TABLE_HEADER.splitlines()[0].count("|")

    benchmark._write(tmp_path / PROXY_JSON, [measured])
    assert json.loads((tmp_path / PROXY_JSON).read_text())[0]["estimate_gb"] == measured.estimate_gb
    assert _proxy(tmp_path / PROXY_JSON) == (
        "1B proxy trial: one GPU on 1: 0.96 of bare, MFU 39%, peak 41.2 GB per GPU (estimated 54.0)"
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for a machine without CUDA")
def test_without_cuda_the_benchmark_exits_2_before_it_builds_anything(tmp_path, capsys):
    assert benchmark.main(["--work", str(tmp_path)]) == 2
    assert "has none" in capsys.readouterr().err and list(tmp_path.iterdir()) == []
