"""benchmarks/gpu_sweep_figures.py on CPU: a finished sweep's study and its trials' result.json files, written by a
real tiny sweep, become its figures, its table row and the GPU check's summary line; a sweep that left no study picked
nothing."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from datetime import datetime, timedelta
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
import gpu_sweep
import gpu_sweep_figures as figures
from gpu_check_summary import SWEEP_JSON, _sweep, sweep_line

from sweep.files.rundir import RunDir
from sweep.spec.spec import load_spec
from sweep.study.run_study import open_run
from sweep.study.study import PICK_ATTR


@pytest.mark.slow
def test_a_finished_sweep_becomes_its_row_its_trials_and_the_summary_line(tiny_sweep, tmp_path):
    _, study = open_run(RunDir(tiny_sweep.run_dir))
    trials = study.trials()
    first = min(trial.datetime_start for trial in trials)
    last = max(trial.datetime_complete for trial in trials)
    ran = figures.Ran(tiny_sweep.run_dir, first - timedelta(seconds=7), last + timedelta(seconds=3), 0, False)
    spec = load_spec(tiny_sweep.run_dir / "spec.yaml")
    sweep = figures.measure(ran, spec, flops=2e6, peak_flops=1e9, card=figures.Card("cpu", 1, 80.0))

    assert sweep.finished == len(trials) == len(sweep.trials)
    assert (sweep.to_first_trial_s, sweep.after_last_s) == (pytest.approx(7.0), pytest.approx(3.0))
    assert sweep.trials_s == pytest.approx((last - first).total_seconds())
    assert sweep.trials_per_hour == pytest.approx(len(trials) * 3600 / sweep.trials_s)
    assert sweep.wall_s == pytest.approx(sweep.trials_s + 10)
    for trial in sweep.trials:
        assert 0 < trial.train_s < trial.span_s and trial.peak_gb is None  # on CPU: no GPU's memory
        result = json.loads((tiny_sweep.run_dir / "trials" / f"{trial.number:04d}" / "result.json").read_text())
        usage = result["usage"]
        assert trial.mfu == pytest.approx(usage["train_tokens"] * 2e6 / usage["train_seconds"] / 1e9)
    tokens = sum(trial.mfu * trial.train_s for trial in sweep.trials) * 1e9 / 2e6
    assert sweep.card_mfu == pytest.approx(tokens * 2e6 / (sweep.trials_s * 1e9))
    pick = study.study.user_attrs[PICK_ATTR]
    assert sweep.pick in (pick["verdict"], f"{pick['lr_fraction']:.3g} @ {pick['mix']} ({pick['confirmation']})")
    assert {trial.role for trial in sweep.trials} >= {"search", "confirmation"}

    row = figures.table_row(sweep, baseline=asdict(sweep))
    assert row.count("|") == figures.TABLE_HEADER.splitlines()[0].count("|")
    assert figures.trials_line(sweep).count(" MFU ") == len(trials)
    gpu_sweep._write(tmp_path / SWEEP_JSON, {"sweeps": [asdict(sweep)]})
    assert _sweep(tmp_path / SWEEP_JSON) == f"sweep on the GPU: {sweep_line([asdict(sweep)])}"


def test_a_sweep_that_left_no_study_picked_nothing(tmp_path):
    spec = gpu_sweep.write_pick_spec(tmp_path, "gpu", card=figures.Card("NVIDIA H100 80GB HBM3", 1, 85.5))
    started = datetime.now()
    ran = figures.Ran(tmp_path / "runs" / "pick-gpu", started, started + timedelta(seconds=12), 2, False)
    assert figures.pick_side(ran, spec) == figures.PickSide(0.25, 2, False, 12.0, 0, "none")
