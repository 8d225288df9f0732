"""benchmarks/full_run_evaluation_gpu.py on what a CPU machine can check: without CUDA it stops in one line; its two
runs are valid full-run configs (the continued one with the plan's three sets and the recipe's non-English share);
and what it reports (the base's losses, each evaluation through the job's watch, an evaluation's cost) is computed
from the watch's record and the timeline it kept, down to the GPU check's summary line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
import full_run_evaluation_gpu as benchmark
from gpu_check_summary import summary

from train_entry.fullrun.job_watch import JobWatch
from train_entry.megatron.validation import side_losses

PREFIXES = {f"{side}{suffix}": f"/data/{side}{suffix}" for side in benchmark.CORPORA for suffix in ("", "_valid")}


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for a machine without CUDA")
def test_without_cuda_it_exits_2_in_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "full_run_evaluation_gpu.py"), "--work", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == "full_run_evaluation_gpu: this machine has no CUDA GPU; run it on a GPU machine"
    assert not any(tmp_path.iterdir())


def test_the_continued_run_evaluates_the_plans_three_sets_from_the_base(tmp_path):
    base = benchmark.base_config(tmp_path, Path("/tok"), PREFIXES, iterations=150)
    assert [source.name for source in base.data.blend] == ["general"] and base.eval_interval is None
    config = benchmark.continued_config(tmp_path, Path("/tok"), PREFIXES, base="/ckpt", iterations=40, eval_interval=10)
    assert [item.side for item in config.data.valid] == ["general", "non_english", "domain"]
    assert config.data.non_english_share == pytest.approx(0.1)  # 10 % of the general side, as the recipe
    assert {source.name: source.weight for source in config.data.blend} == benchmark.BLEND
    assert config.optimization.lr == pytest.approx(benchmark.LR_FRACTION * benchmark.BASE_LR)
    assert config.checkpoint.base_dir == "/ckpt" and config.log_interval == 1


def test_what_it_reports_is_the_watchs_record_and_its_timeline(tmp_path):
    config = benchmark.continued_config(tmp_path, Path("/tok"), PREFIXES, base="/ckpt", iterations=20, eval_interval=10)
    lines: list[str] = []
    watch = JobWatch(benchmark.watch_config(config, bound=0.05), None, name="t", directory=tmp_path, log=lines.append)
    timeline = benchmark.Timeline()
    evaluator = benchmark.TimedWatch(watch, timeline)
    losses = {0: [3.0, 4.0, 2.0], 10: [3.03, 4.1, 1.8], 20: [3.3, 4.4, 1.7]}  # general, non-English, domain
    clock = 100.0
    for step in range(21):
        clock += 0.5 if step else 0.0  # the step's training (none before iteration 0's evaluation)
        if step in losses:  # the sets' forward passes (2 s), then the watch's call, then the report
            clock += 2.0
            assert evaluator.evaluate(step, losses[step]) is False  # the watch warns; only --stop-on-forgetting stops
            timeline.evaluated[step] = clock  # where TimedWatch stamps it, on this test's clock
        if step:
            timeline.reported[step], timeline.step_seconds[step] = clock, 0.5
    found = benchmark.figures(config, watch, lines, timeline)
    domain, general = side_losses(["general", "non_english", "domain"], losses[20], 0.1)
    assert found["base_losses"] == {"domain": 2.0, "general": pytest.approx(0.9 * 3.0 + 0.1 * 4.0)}
    assert [e["iteration"] for e in found["evaluations"]] == [10, 20]
    assert found["evaluations"][1]["forgetting"] == pytest.approx(general / 3.1 - 1)
    assert found["evaluations"][1]["domain_gain"] == pytest.approx(1 - domain / 2.0)
    # Iteration 10 is within the bound; 20 over it once, which does not trip the watch (two in a row do).
    assert found["watch_lines"][0] == "watch base losses: domain 2.0000, general 3.1000"
    assert "within the predicted upper bound 0.0500" in found["watch_lines"][1]
    assert "exceeds the predicted upper bound 0.0500 (1 evaluation(s) in a row" in found["watch_lines"][2]
    assert found["evaluation_seconds"] == pytest.approx(2.0) and found["step_seconds"] == pytest.approx(0.5)
    assert found["evaluation_in_steps"] == pytest.approx(4.0)
    assert found["share_at_plan_interval"] == pytest.approx(2.0 / (2.0 + benchmark.PLAN_EVAL_INTERVAL * 0.5))
    shown = benchmark.report(found)
    assert "an evaluation: 2000 ms, 4.00 training iterations (500 ms each)" in shown
    assert f"base losses at iteration 0: domain 2.0000, general {0.9 * 3.0 + 0.1 * 4.0:.4f}" in shown

    (tmp_path / "evaluation.json").write_text(json.dumps(found))
    last = found["watch_lines"][-1].removeprefix("watch ")
    assert summary(tmp_path, ("evaluation",)) == (
        f"gpu_check: full-run evaluation of 3 sets: 4.00 training iterations each; last: {last}"
    )


def test_an_evaluation_is_timed_only_where_the_iteration_before_it_reported():
    timeline = benchmark.Timeline(reported={9: 10.0}, step_seconds={10: 0.25, 20: 0.25}, evaluated={10: 12.25, 20: 30.0})
    assert timeline.evaluation_seconds() == {10: pytest.approx(2.0)}
