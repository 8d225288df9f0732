"""A sweep of N trials at concurrency 2 under Ray Tune against the same trials one after another.

The sweep runs as `sweep run` does (Ray start-up, the Optuna study in SQLite, a Ray actor per
concurrent trial); pruning and the forgetting guard are off so that both sides run every trial
to the end. The same points are then run in this process, one after another, by `run_trial`.
Both sides reuse the cached base and corpora, so the ratio is about scheduling alone.

    .venv/bin/python benchmarks/sweep_concurrency.py [--spec search_spaces/lr_mix.yaml] [--trials 4]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml

from sweep.files.rundir import RUNS, RunDir
from sweep.run.prepare import prepare
from sweep.spec.spec import load_spec
from sweep.study.study import load_study
from train_entry.proxy import run_trial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", type=Path, default=Path("search_spaces/lr_mix.yaml"))
    parser.add_argument("--trials", type=int, default=4)
    args = parser.parse_args()

    spec = load_spec(args.spec)
    raw = spec.model_dump(mode="json", exclude_none=True)  # corpus paths absolute: it loads from anywhere
    raw["search"].update(num_trials=args.trials, pruner={"type": "none"}, forgetting_guard=None)
    raw["execution"]["concurrency"] = 2
    raw["tracking"] = {"wandb": {"mode": "disabled"}}
    workdir = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    bench_spec = workdir / "bench.yaml"
    bench_spec.write_text(yaml.safe_dump(raw, sort_keys=False))
    try:
        prepared = prepare(load_spec(bench_spec))  # build or reuse the caches before timing

        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "cli", "run", str(bench_spec), "--name", "bench"],
            cwd=workdir,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        sweep_s = time.perf_counter() - started

        run = RunDir(workdir / RUNS / "bench")
        record = run.read_record()
        study = load_study(url=record.url(run), name=record.study_name)
        points = [study.plan.space.point(t.params) for t in study.trials()]
        torch.set_num_threads(prepared.spec.execution.cpus)
        started = time.perf_counter()
        for k, point in enumerate(points):
            config = prepared.trial_config(lr_fraction=point.lr_fraction, mix=point.mix, output_dir=workdir / f"seq{k}")
            run_trial(config, lambda metrics: False)
        sequential_s = time.perf_counter() - started
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"trials: {len(points)} x {spec.proxy.steps} steps, cpus per trial {prepared.spec.execution.cpus}")
    print(f"sweep (Ray Tune, concurrency 2): {sweep_s:.1f} s")
    print(f"one after another, one process:  {sequential_s:.1f} s")
    print(f"speed-up: {sequential_s / sweep_s:.2f}x")


if __name__ == "__main__":
    main()
