"""benchmarks/gpu_sweep.py on what a CPU machine can check: without CUDA it stops in one line; its specs fit an 80 GB
card and are refused, before anything runs, on a card whose memory the trials sharing it do not fit; its data
prepares; its pick check's CPU sweep runs to a pick; and the summary line says what the sweeps and the pick check
gave (a sweep's own figures: test_gpu_sweep_figures.py)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
import gpu_sweep as benchmark
from gpu_check_summary import pick_line, sweep_line

from sweep.files.rundir import RunDir
from sweep.run.prepare import prepare
from sweep.spec.spec import load_spec
from sweep.study.run_study import open_run
from sweep.study.study import PICK_ATTR
from tests.conftest import TINY_SPEC

H100 = benchmark.Card("NVIDIA H100 80GB HBM3", 1, 85.5)
"""81559 MiB, as torch reports the card."""


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for a machine without CUDA")
def test_without_cuda_it_exits_2_in_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gpu_sweep.py"), "--work", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "gpu_sweep: this machine has no CUDA GPU; run benchmarks/gpu_sweep.py on a GPU machine"
    ]
    assert not (tmp_path / "work").exists()


def test_its_three_specs_fit_an_80_gb_card_four_trials_to_it_at_a_quarter(tmp_path):
    specs = {share: benchmark.write_spec(tmp_path, share, card=H100, steps=150) for share in benchmark.SHARES}
    assert {share: spec.execution.concurrency for share, spec in specs.items()} == {1.0: 1, 0.25: 4, 0.5: 2}
    quarter = specs[0.25]
    assert quarter.execution.gpu_memory_gb == 85.5 and quarter.search.num_trials == 4
    assert 0.1e9 < benchmark._params(quarter) < 0.35e9  # the 100-350 M parameters
    assert 4 * benchmark.trial_size(quarter.execution, quarter.proxy, benchmark.base_shape(quarter)).total_gb < 85.5

    picks = {side: benchmark.write_pick_spec(tmp_path, side, card=H100) for side in benchmark.PICK_SIDES}
    assert {side: spec.execution.gpus for side, spec in picks.items()} == {"gpu": 0.25, "cpu": 0.0}
    for spec in picks.values():  # the same spec but for the base, the proxy and where the trials train
        sections = ("data", "space", "search", "objective")
        assert [getattr(spec, name) for name in sections] == [getattr(quarter, name) for name in sections]
        assert spec.execution.concurrency == 4 and spec.base.builtin.hidden_size == 64


def test_trials_that_do_not_fit_the_card_together_are_refused_before_anything_runs(tmp_path, capsys):
    work = tmp_path / "work"
    args = argparse.Namespace(work=work, time_limit=290.0, steps=150, peak_tflops=989.0, json=tmp_path / "out.json")
    assert benchmark.run(args, benchmark.Card("a 24 GB card", 1, 24.0)) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(
        f"gpu_sweep: {work / 'gpus-0.25.yaml'}: (top level): execution.gpus = 0.25: 4 trials of builtin:tiny-llama "
        "at once share one GPU (execution.concurrency 4), each needing 13.8 GB per GPU"
    )
    assert error.endswith(": 4 x 13.8 = 55.3 GB, over the 24 GB of one GPU (execution.gpu_memory_gb); 1 GPU holds it "
                          "(13.8 GB each): set execution.gpus: 1")  # fmt: skip
    assert sorted(path.name for path in work.iterdir()) == ["gpus-0.25.yaml", "gpus-1.yaml"]  # no cache, no run
    assert not (tmp_path / "out.json").exists()


@pytest.mark.slow
def test_its_data_and_grid_prepare_with_the_base_cut_down(tmp_path, monkeypatch):
    """Everything of the benchmark's preparation but the 0.15 B base's pretraining, hours on a CPU: the corpora at
    its sequence length, its validation texts (the search's pool and the confirmation's draw) and the grid."""
    benchmark.write_spec(tmp_path, 1.0, card=H100, steps=150)
    path = benchmark.spec_path(tmp_path, benchmark.sweep_name(1.0))
    raw = yaml.safe_load(path.read_text())
    raw["base"]["builtin"] |= {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1,
                               "intermediate_size": 64, "pretrain_steps": 2, "batch_size": 2, "warmup_steps": 1}  # fmt: skip
    path.write_text(yaml.safe_dump(raw))
    prepared = prepare(load_spec(path), shipped=None, root=tmp_path / "cache")
    assert len(prepared.texts) == 2  # the pool for the grid, draw 1 for the pick's confirmation
    config = prepared.trial_config(lr_fraction=0.3, mix=prepared.spec.space.mix[1], output_dir=tmp_path / "trial")
    assert (config.proxy.seq_len, config.proxy.batch_size, config.threads) == (512, 16, benchmark.CPUS_PER_TRIAL)


def test_the_pick_checks_base_is_the_tests_tiny_base():
    """So the sweep below finds the base the session's tiny sweeps pretrained, as the pick check's CPU half finds the
    one its GPU half did."""
    assert benchmark.pick_spec_data("cpu", card=H100)["base"] == TINY_SPEC["base"]


@pytest.mark.slow
def test_the_pick_checks_cpu_sweep_runs_its_spec_to_a_pick(tmp_path, tiny_corpora):
    """The pick check's CPU half, as the benchmark runs it after its GPU half: a real `sweep run` of its spec, but on
    the tests' tiny corpora, whose tokenizer and base the session has cached (the bundled corpora's preparation:
    test_its_data_and_grid_prepare_with_the_base_cut_down)."""
    data = benchmark.pick_spec_data("cpu", card=H100)
    data["data"] = {
        side: corpus | {split: str(tiny_corpora / corpus[split]) for split in ("train", "valid")}
        for side, corpus in TINY_SPEC["data"].items()
    }
    spec = benchmark._save_spec(benchmark.spec_path(tmp_path, "pick-cpu"), data)
    assert benchmark.ray_start(spec) > 0  # the overhead's Ray start, with the driver's own settings
    env = {**os.environ, "PYTHONPATH": benchmark._pythonpath()}
    sides = benchmark.pick_check(tmp_path, {"cpu": spec}, env=env, deadline=time.monotonic() + 600)
    cpu = sides["cpu"]
    assert (cpu["exit_code"], cpu["stopped"], cpu["gpus_per_trial"]) == (0, False, 0.0)
    _, study = open_run(RunDir(tmp_path / "runs" / "pick-cpu"))
    pick = study.study.user_attrs[PICK_ATTR]
    assert cpu["finished"] == len(study.trials()) >= 4 + 2  # the grid, then the pick's 2 confirmations
    assert cpu["pick"] == f"{pick['lr_fraction']:.3g} @ {pick['mix']} ({pick['confirmation']})"
    assert pick_line({"gpu": cpu | {"gpus_per_trial": 0.25}, "cpu": cpu}) == (
        f"pick check GPU (gpus 0.25) vs CPU: the same pick: {cpu['pick']}"
    )


def test_the_pick_check_line_says_same_different_or_why_there_is_no_answer():
    gpu = {"gpus_per_trial": 0.25, "exit_code": 0, "stopped": False, "wall_s": 40.0, "finished": 6,
           "pick": "0.3 @ 1:1 (confirmed)"}  # fmt: skip
    cpu = gpu | {"gpus_per_trial": 0.0}
    assert pick_line({"gpu": gpu, "cpu": cpu}) == (
        "pick check GPU (gpus 0.25) vs CPU: the same pick: 0.3 @ 1:1 (confirmed)"
    )
    assert pick_line({"gpu": gpu, "cpu": cpu | {"pick": "0.1 @ 4:1 (confirmed)"}}) == (
        "pick check GPU (gpus 0.25) vs CPU: different picks: GPU 0.3 @ 1:1 (confirmed), CPU 0.1 @ 4:1 (confirmed)"
    )
    assert pick_line({"gpu": gpu | {"exit_code": 1}, "cpu": cpu | {"stopped": True}}) == (
        "pick check GPU vs CPU: no answer: the GPU sweep exited 1, the CPU sweep stopped at the time limit"
    )
    not_run = "pick check GPU vs CPU: not run (the time ran out before it)"
    assert pick_line({"gpu": gpu, "cpu": None}) == pick_line(None) == not_run


def test_the_summary_line_sets_each_share_against_a_whole_gpu_and_says_whether_the_picks_agree():
    whole = {"gpus_per_trial": 1.0, "trials_per_hour": 100.0, "card_mfu": 0.12, "stopped": False, "pick": "0.1 @ 4:1"}
    quarter = whole | {"gpus_per_trial": 0.25, "trials_per_hour": 320.0, "card_mfu": 0.38}
    half = whole | {"gpus_per_trial": 0.5, "trials_per_hour": None, "card_mfu": None, "stopped": True, "pick": "none"}
    assert sweep_line([whole, quarter]) == (
        "trials/hour at 1 GPU per trial 100, card MFU 12%, 0.25 GPU per trial 320 (3.20x), card MFU 38%; the same pick "
        "in every sweep: 0.1 @ 4:1"
    )
    assert sweep_line([whole, quarter, half]).endswith(
        "0.5 GPU per trial -, stopped at the time limit; picks differ: 1: 0.1 @ 4:1, 0.25: 0.1 @ 4:1, 0.5: none"
    )
    assert sweep_line([]) == "no sweep ran"
