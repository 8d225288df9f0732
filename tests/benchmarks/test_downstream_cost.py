"""benchmarks/downstream_cost.py on what a CPU machine can check: the requests it counts for the bundled task, its
row, and without CUDA it exits with code 2 before it builds anything."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import downstream_cost as benchmark

from train_entry.downstream.tasks import DownstreamPlan, read_task


def test_the_bundled_task_is_160_requests_and_a_limit_counts_the_first_examples():
    task = read_task(benchmark.TASK, "acc")
    assert benchmark.requests(DownstreamPlan(tasks=[task])) == 160  # 40 items x 4 choices
    assert benchmark.requests(DownstreamPlan(tasks=[task], limit=10)) == 40


def test_a_row_gives_the_ratio_to_training_and_the_cost_per_thousand_requests():
    row = benchmark.Row(parameters=158_000_000, steps=50, train_seconds=20.0, requests=160, downstream_seconds=4.0)
    assert benchmark.table_row(row) == "| 0.158 B | 50 | 20.0 | 160 | 4.0 | 0.20 | 25.00 |"
    assert benchmark.table_row(row).count("|") == benchmark.TABLE_HEADER.splitlines()[0].count("|")


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for a machine without CUDA")
def test_without_cuda_the_benchmark_exits_2_before_it_builds_anything(tmp_path, capsys):
    assert benchmark.main(["--work", str(tmp_path)]) == 2
    assert "has none" in capsys.readouterr().err and list(tmp_path.iterdir()) == []
