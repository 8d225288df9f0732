"""`sweep promote ... --calibrate`: refused without CUDA; a measured rate replaces the MFU assumption and
the plan says so, on which card and with which attention; on a GPU the whole path runs."""

from __future__ import annotations

import pytest
import torch

from cli import main
from sweep.promote.errors import PromotionError
from sweep.promote.estimate.step_time import step_time
from sweep.promote.plan.calibrate import layer_flops_per_token, measured_assumptions
from sweep.promote.plan.plan import Plan, make_plan
from sweep.promote.plan.summary import summary_markdown
from sweep.promote.request.config import PromotionConfig
from train_entry.megatron.throughput import LayerTiming


def promote(run_dir, *flags: str) -> int:
    return main(["promote", "plan", str(run_dir), *flags])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks what a machine without CUDA answers")
def test_without_cuda_calibrate_exits_2_and_writes_no_plan(finished_run, capsys):
    run_dir = finished_run()
    assert promote(run_dir, "--target", "llama3.1-8b", "--calibrate") == 2
    assert "--calibrate times the target's layers on a local CUDA GPU, and this machine has none" in (
        capsys.readouterr().err
    )
    assert not (run_dir / "promotion").exists()


def test_calibrate_and_mfu_together_exit_2(finished_run, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["promote", "plan", str(finished_run()), "--target", "llama3.1-8b", "--calibrate", "--mfu", "0.4"])
    assert exited.value.code == 2
    assert "argument --mfu: not allowed with argument --calibrate" in capsys.readouterr().err


def test_a_dry_run_says_its_compute_rate_is_assumed_and_which_one(finished_run):
    run_dir = finished_run()
    assert promote(run_dir, "--target", "llama3.1-70b") == 0
    [directory] = (run_dir / "promotion").iterdir()
    assert Plan.read(directory).assumptions.calibration is None
    summary = " ".join((directory / "summary.md").read_text().replace("│", " ").split())
    assert "compute rate ASSUMED, not measured: 425 TFLOP/s per GPU = 43.0% MFU of the 989 TFLOP/s peak" in summary
    assert "Llama 3 Herd of Models (arXiv:2407.21783)" in summary


def test_a_measured_layer_replaces_the_assumption_and_the_plan_records_where_it_ran(finished_run):
    run_dir = finished_run()
    assumed = make_plan(run_dir, PromotionConfig(target="llama3.1-8b"))
    par, model = assumed.chosen.parallelism, assumed.target.model
    # A layer measured at 300 TFLOP/s on the plan's micro-batch and recomputation.
    flops = layer_flops_per_token(model, par.recompute) * par.micro_batch_size * model.seq_length
    timing = LayerTiming(seconds_per_layer=flops / 300e12, card="NVIDIA H200", attention="torch sdpa")
    config = PromotionConfig(target="llama3.1-8b", assumptions=measured_assumptions(assumed, timing))
    plan = make_plan(run_dir, config)
    calibration = plan.assumptions.calibration
    assert (calibration.card, calibration.attention, calibration.recompute) == (
        "NVIDIA H200",
        "torch sdpa",
        par.recompute,
    )
    assert calibration.tflops == pytest.approx(300.0)
    assert plan.assumptions.mfu == pytest.approx(300 / 989)
    # Its step time moves the checkpoint interval: what runs changes, so it is another plan beside the assumed one.
    assert plan.id != assumed.id and plan.run.checkpoint.save_interval != assumed.run.checkpoint.save_interval
    chosen = plan.chosen
    at_assumed_mfu = step_time(
        model,
        chosen.parallelism,
        data_parallel=chosen.data_parallel,
        cluster=plan.cluster,
        assumptions=assumed.assumptions,
    )
    assert chosen.step.compute_s == pytest.approx(at_assumed_mfu.compute_s * 0.43 * 989 / 300)
    summary = " ".join(summary_markdown(plan).replace("│", " ").split())
    assert "MEASURED, not assumed: 300 TFLOP/s per GPU = 30.3% MFU" in summary
    assert "measured by --calibrate on NVIDIA H200 (torch sdpa attention)" in summary


def test_a_measurement_faster_than_the_clusters_peak_is_refused(finished_run):
    assumed = make_plan(finished_run(), PromotionConfig(target="llama3.1-8b"))
    with pytest.raises(PromotionError, match="more than the 989 TFLOP/s peak of cluster h100-480"):
        measured_assumptions(assumed, LayerTiming(seconds_per_layer=1e-6, card="NVIDIA B200", attention="torch sdpa"))


@pytest.mark.gpu
def test_calibrate_on_a_gpu_plans_with_the_measured_rate(finished_run):
    run_dir = finished_run()
    assert promote(run_dir, "--target", "llama3.1-8b", "--calibrate") == 0
    [directory] = (run_dir / "promotion").iterdir()
    calibration = Plan.read(directory).assumptions.calibration
    assert calibration.card == torch.cuda.get_device_name() and calibration.seq_length == 8192
    assert 20 < calibration.tflops < 2000
    assert "MEASURED, not assumed" in (directory / "summary.md").read_text()
