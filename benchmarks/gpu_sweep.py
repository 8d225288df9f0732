"""A sweep on this machine's GPUs as a team runs one: `sweep run` of a ~150M-parameter built-in base, each trial on a
whole GPU (execution.gpus 1), then four trials to a GPU (0.25), then two (0.5); trials per hour, each trial's MFU and
peak memory, the sweep's own overhead, and the pick of each.

Each sweep is the real thing: `python -m cli run SPEC` in a process of its own (Ray of its own, Ray Tune, the Optuna
study in SQLite, the surrogate's pick, the pick's confirmation at two fresh seeds, the report). The spec is
search_spaces/lr_mix.yaml's corpora (domain e-commerce, general English) with a built-in base of 12 layers x 1024
(FFN 2816, 16 heads / 8 KV, a 4096-entry BPE: 0.15 B parameters), briefly pretrained (1.6 M tokens: the sweep's
machinery is measured, not a recipe), and a grid of 4 points (lr_fraction 0.1 and 0.3, mixes 4:1 and 1:1), no
pruning and no forgetting guard, so every sweep runs the same 4 trials to the end, then 2 confirmation trials of its
pick. Trials at once: as many as the GPUs hold at that share (execution.concurrency = GPUs / gpus per trial).

Before any of it, the three specs are checked against the card's memory (execution.gpu_memory_gb, the card's own):
trials sharing a GPU must fit it together (sweep.spec.trial_scale), else the benchmark stops with the figures, exit 2.
Then the caches are built once, cold, in a process of their own (the BPE, the tokenised corpora, the base's
pretraining on the GPU and its losses: the data preparation every first sweep pays), and read again warm (what each
sweep below pays); a Ray start with the driver's own settings is timed apart.

What each sweep's row says, from its study and its trials' result.json (train_entry.usage; gpu_sweep_figures.py):
- trials/hour: its finished trials over the span from the first trial's start to the last one's end, and over the
  sweep's whole wall time (Python and Ray start, the warm caches, the pick, the report, Ray's shutdown);
- to the first trial, after the last one: the driver's own time before and after its trials;
- trial MFU: each trial's model FLOPs (sweep.promote.estimate.counts: 6 x matmul parameters + attention) over its training
  steps' time (evaluations and start-up left out), against one card's dense bf16 peak (--peak-tflops, default the
  H100 / H200 SXM's 989): four trials sharing a card each show their part of it; card MFU: all trials' FLOPs over the
  trial span, against all the GPUs';
- peak memory: each trial's allocator peak (torch.cuda.max_memory_reserved), the largest x the trials sharing a card
  against the card's memory and the estimate the spec was checked with.

Then the pick check, GPU against CPU, where both can run: the 0.15 B base's trials would take hours on a CPU, so the
same corpora, grid, search and confirmation with the tests' tiny base (2 layers x 64, a 512-entry BPE) and proxy (40
steps of 4 x 64 tokens) are swept twice, 4 trials at once: with the trials on the GPU (gpus 0.25), then on the CPU
(CUDA hidden from that sweep's driver and trials; the base and its losses are those the first cached, so only where
the trials train differs); its line says whether the two picks, point and confirmation, are the same.

    .venv/bin/python benchmarks/gpu_sweep.py [--json PATH] [--work DIR] [--only sweeps|pick] [--time-limit 400]
                                             [--pick-time-limit 210] [--steps 150]

--only runs one of the two (benchmarks/gpu_check.sh's parts sweep and pick): on an H200 (2026-11-28) the caches took
38 s cold, a Ray start 9 s, the sweeps 115 s at 1 GPU per trial and 103 s at 0.25, and the pick check's GPU sweep
77 s, so the three sweeps and the pick check together outgrow one 10-minute call with the install.

Each row is printed (and --json rewritten) the moment its sweep ends; a sweep still running at --time-limit is
stopped as Ctrl-C stops one, and its row says so. Without a CUDA GPU it exits with code 2 in one line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from gpu_check_summary import pick_line, sweep_line
from gpu_sweep_figures import (
    TABLE_HEADER,
    Card,
    Ran,
    base_shape,
    measure,
    pick_side,
    preparation_line,
    table_row,
    trials_line,
)

from sweep.files.config_file import SpecError
from sweep.files.rundir import RUNS, NotARunDirectory
from sweep.promote.estimate.counts import model_flops_per_token
from sweep.run.driver import RayConnection
from sweep.spec.spec import SweepSpec, load_spec
from sweep.spec.trial_scale import trial_size

REPO = Path(__file__).resolve().parents[1]
SHARES = (1.0, 0.25, 0.5)
"""GPUs per trial, in the order run: a whole GPU first (the baseline), then the share the issue's goal is about."""
PEAK_TFLOPS = 989.0
"""H100 / H200 SXM dense bf16 (sweep.promote.estimate.clusters)."""
CPUS_PER_TRIAL = 2
"""A GPU trial's torch threads: its data loading and Python; four at once take 8 of a 16-core machine."""
GRACE_S = 30.0
"""After --time-limit: how long a stopped sweep has to end its trials and shut its Ray down before it is killed."""
MIN_SWEEP_S = 60.0
"""A sweep is not started with less time left: its Ray start and first trial alone take half of it."""
BASE = {
    "vocab_size": 4096, "hidden_size": 1024, "num_layers": 12, "num_heads": 16, "num_kv_heads": 8,
    "intermediate_size": 2816, "seq_len": 512, "pretrain_steps": 200, "batch_size": 16, "warmup_steps": 20,
}  # fmt: skip
"""0.15 B parameters; 200 x 16 x 512 = 1.6 M tokens of pretraining, seconds on one GPU."""
PICK_BASE = {
    "model": "builtin:tiny-llama", "max_lr": 3.0e-3,
    "builtin": {
        "vocab_size": 512, "hidden_size": 64, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1,
        "intermediate_size": 176, "seq_len": 64, "pretrain_steps": 300, "batch_size": 8, "warmup_steps": 20,
    },
}  # fmt: skip
"""The pick check's base: the tests' tiny base (tests/conftest.py), its peak LR with it, whose sweep of 6 trials takes
~30 s on 2 cores, where the 0.15 B base's trials would take hours on a CPU."""
PICK_PROXY = {"steps": 40, "seq_len": 64, "batch_size": 4, "warmup_steps": 4, "eval_interval": 20, "eval_sequences": 16}
PICK_SIDES = {"gpu": 0.25, "cpu": 0.0}
"""GPUs per trial of the pick check's two sweeps, run in this order: the GPU one pretrains and caches the base."""
PICK_AT_ONCE = 4
"""Trials at once in both: the grid's 4 points together, then the confirmations."""
MIN_PICK_S = 20.0
"""A pick check sweep is not started with less of --pick-time-limit left."""
PREPARE = """
import json, sys, time
from sweep.run.prepare import prepare
from sweep.spec.spec import load_spec
spec = load_spec(sys.argv[1])
times = []
for _ in range(2):
    started = time.perf_counter()
    prepare(spec, shipped=None)
    times.append(time.perf_counter() - started)
print(json.dumps({"cold_s": times[0], "warm_s": times[1]}))
"""
"""The caches built cold, then read warm, in a process of their own: its CUDA context is gone before the sweeps."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures here, for benchmarks/gpu_check.sh")
    parser.add_argument("--work", type=Path, help="where the specs, caches and runs go (default: a temp dir)")
    parser.add_argument("--only", choices=("sweeps", "pick"), help="run the sweeps or the pick check alone")
    parser.add_argument("--time-limit", type=float, default=400.0, help="seconds for the sweeps; default 400")
    parser.add_argument("--pick-time-limit", type=float, default=210.0,
                        help="seconds for the pick check after the sweeps; default 210")  # fmt: skip
    parser.add_argument("--steps", type=int, default=150, help="steps of each proxy trial (16 x 512 tokens each)")
    parser.add_argument("--peak-tflops", type=float, default=PEAK_TFLOPS, help="one card's dense bf16 peak")
    args = parser.parse_args(argv)
    card = Card.detect()
    if card is None:
        print("gpu_sweep: this machine has no CUDA GPU; run benchmarks/gpu_sweep.py on a GPU machine", file=sys.stderr)
        return 2
    return run(args, card)


def run(args: argparse.Namespace, card: Card) -> int:
    """Every sweep of the benchmark on `card`; exit 2 with the figures, before anything runs, when its specs do not
    fit the card."""
    deadline = time.monotonic() + args.time_limit
    work = (args.work or Path(tempfile.mkdtemp(prefix="gpu-sweep-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        specs = {share: write_spec(work, share, card=card, steps=args.steps) for share in SHARES}
        picks = {side: write_pick_spec(work, side, card=card) for side in PICK_SIDES}
    except SpecError as exc:
        print(f"gpu_sweep: {exc}", file=sys.stderr)
        return 2
    env = {**os.environ, "CPT_SWEEP_CACHE": str(work / "cache"), "PYTHONPATH": _pythonpath()}
    figures: dict[str, Any] = {"card": asdict(card)}
    failed = False
    if args.only != "pick":
        failed = run_sweeps(args, card, specs, work=work, env=env, figures=figures, deadline=deadline)
        print(f"gpu_sweep: {sweep_line(figures['sweeps'])}", flush=True)
    if args.only != "sweeps":
        figures["pick_check"] = pick_check(work, picks, env=env, deadline=time.monotonic() + args.pick_time_limit)
        _write(args.json, figures)
        print(f"gpu_sweep: {pick_line(figures['pick_check'])}", flush=True)
    ended = [*figures.get("sweeps", []), *(side for side in figures.get("pick_check", {}).values() if side)]
    return 0 if not failed and all(sweep["exit_code"] == 0 for sweep in ended) else 1


def run_sweeps(
    args: argparse.Namespace,
    card: Card,
    specs: dict[float, SweepSpec],
    *,
    work: Path,
    env: dict[str, str],
    figures: dict[str, Any],
    deadline: float,
) -> bool:
    """The caches, a Ray start and a sweep at each share into `figures` (--json rewritten after each); whether a
    sweep left no figures."""
    first = specs[SHARES[0]]
    shape = base_shape(first)
    print(f"{card.name} x {card.count}, {card.memory_gb:.1f} GB each; base {_params(first) / 1e9:.2f}B parameters; "
          f"{first.proxy.steps} steps x {first.proxy.batch_size} x {first.proxy.seq_len} tokens per trial; MFU of "
          f"{args.peak_tflops:g} TFLOP/s per GPU", flush=True)  # fmt: skip
    figures["preparation"] = prepare_caches(spec_path(work, sweep_name(SHARES[0])), env)
    figures["ray_start_s"] = ray_start(specs[min(SHARES)])
    figures["sweeps"], failed = [], False
    print(preparation_line(figures), flush=True)
    print(TABLE_HEADER, flush=True)
    for share, spec in specs.items():
        left = deadline - time.monotonic()
        if left < MIN_SWEEP_S:
            print(f"gpu_sweep: gpus {share:g} not run: {left:.0f} s left of --time-limit {args.time_limit:g}")
            continue
        ran = run_sweep(work, sweep_name(share), env=env, deadline=deadline)
        try:
            sweep = measure(ran, spec, flops=model_flops_per_token(shape), peak_flops=args.peak_tflops * 1e12,
                            card=card)  # fmt: skip
        except NotARunDirectory as exc:  # it ended before its study was made: its log says why
            print(f"gpu_sweep: gpus {share:g}: no figures ({exc})", flush=True)
            failed = True
            continue
        figures["sweeps"].append(asdict(sweep))
        print(table_row(sweep, baseline=figures["sweeps"][0]), flush=True)
        print(trials_line(sweep), flush=True)
        _write(args.json, figures)
    _write(args.json, figures)
    return failed


def sweep_name(share: float) -> str:
    return f"gpus-{share:g}"


def spec_path(work: Path, name: str) -> Path:
    return work / f"{name}.yaml"


def spec_data(share: float, *, card: Card, steps: int) -> dict[str, Any]:
    """The benchmark's spec at `share` GPUs per trial, as many trials at once as the card(s) hold at that share."""
    data = REPO / "data"
    corpora = {
        side: {"train": str(data / name / "train.jsonl"), "valid": str(data / name / "valid.jsonl")}
        for side, name in (("domain", "ecommerce"), ("general", "general_en"))
    }
    return {
        # The base's own pretraining peak LR: 1e-3, as for GPT-3 Small-sized models (Brown et al. 2020, table 2.1:
        # 6.0e-4 at 125 M, 3.0e-4 at 350 M), a little higher for a pretraining of 200 steps.
        "base": {"model": "builtin:tiny-llama", "max_lr": 1.0e-3, "builtin": BASE},
        "data": corpora,
        "proxy": {
            "steps": steps,
            "seq_len": BASE["seq_len"],
            "batch_size": 16,
            "warmup_steps": max(1, steps // 10),
            "eval_interval": max(1, steps // 2),
            "eval_sequences": 16,
        },
        "space": {"lr_fraction": [0.1, 0.3], "mix": ["4:1", "1:1"]},
        "objective": {"forgetting_budget": 0.05},
        # Every trial to the end and no replicate: the same 4 trials in every sweep, then the pick's 2 confirmations.
        "search": {
            "sampler": "grid",
            "pruner": {"type": "none"},
            "forgetting_guard": None,
            "replicates": {"top": 0},
            "confirmation": {"seeds": 2, "candidates": 1},
        },
        "execution": {
            "concurrency": max(1, math.floor(card.count / share + 1e-6)),
            "cpus": CPUS_PER_TRIAL,
            "gpus": share,
            "gpu_memory_gb": round(card.memory_gb, 1),
        },
        "tracking": {},  # no W&B: its service in every trial process is not what is measured
    }


def write_spec(work: Path, share: float, *, card: Card, steps: int) -> SweepSpec:
    """The spec at `share`, written under `work` and loaded as `sweep run` loads it: SpecError with the figures when
    its trials do not fit the card."""
    return _save_spec(spec_path(work, sweep_name(share)), spec_data(share, card=card, steps=steps))


def pick_spec_data(side: str, *, card: Card) -> dict[str, Any]:
    """The pick check's spec: the benchmark's corpora, grid, search and confirmation with a base and proxy that a CPU
    sweeps in about a minute, its trials sharing a GPU (PICK_SIDES["gpu"]) or on the CPU (0)."""
    data = spec_data(PICK_SIDES["gpu"], card=card, steps=PICK_PROXY["steps"])
    data["base"] = PICK_BASE
    data["proxy"] = PICK_PROXY
    data["execution"] |= {"gpus": PICK_SIDES[side], "concurrency": PICK_AT_ONCE, "cpus": 1}
    return data


def write_pick_spec(work: Path, side: str, *, card: Card) -> SweepSpec:
    return _save_spec(spec_path(work, f"pick-{side}"), pick_spec_data(side, card=card))


def _save_spec(path: Path, data: dict[str, Any]) -> SweepSpec:
    """`data` written to `path` and loaded as `sweep run` loads it: SpecError with the figures when its trials do not
    fit the card."""
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_spec(path)


def _params(spec: SweepSpec) -> float:
    return trial_size(spec.execution, spec.proxy, base_shape(spec)).params_billion * 1e9


def _pythonpath() -> str:
    """The checkout first, for `-m cli` and for the Ray workers the sweep starts, which inherit it."""
    return os.pathsep.join(path for path in (str(REPO), os.environ.get("PYTHONPATH", "")) if path)


def prepare_caches(path: Path, env: dict[str, str]) -> dict[str, float]:
    """Seconds of the sweep's data preparation with an empty cache, then with a full one."""
    done = subprocess.run([sys.executable, "-c", PREPARE, str(path)], env=env, capture_output=True, text=True,
                          check=False)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"gpu_sweep: preparing the caches failed:\n{done.stdout[-4000:]}{done.stderr[-4000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def ray_start(spec: SweepSpec) -> float:
    """Seconds of a Ray start and shutdown with the driver's own settings for `spec`'s trials."""
    started = time.perf_counter()
    with RayConnection(address=None, wandb=None) as connection:
        connection.ensure(spec.execution)
    return time.perf_counter() - started


def run_sweep(work: Path, name: str, *, env: dict[str, str], deadline: float) -> Ran:
    """`sweep run` of the spec `name` in a process of its own, stopped as Ctrl-C stops it at `deadline`."""
    log = work / f"{name}.log"
    started = datetime.now()
    with log.open("w") as out:
        # In this process group: a `timeout` that stops the benchmark stops the sweep and its Ray with it.
        process = subprocess.Popen([sys.executable, "-m", "cli", "run", str(spec_path(work, name)), "--name", name],
                                   cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        stopped = False
        try:
            code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            stopped = True
            process.terminate()  # the driver takes SIGTERM as Ctrl-C: Tune stops the trials, Ray shuts down
            try:
                code = process.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
    if code != 0 and not stopped:
        print(f"gpu_sweep: `sweep run` of {name} exited {code}; the end of {log}:", file=sys.stderr)
        print("\n".join(log.read_text(errors="replace").splitlines()[-30:]), file=sys.stderr)
    return Ran(work / RUNS / name, started, datetime.now(), code, stopped)


def pick_check(work: Path, specs: dict[str, SweepSpec], *, env: dict[str, str], deadline: float) -> dict[str, Any]:
    """The pick check's sweeps, on the GPU, then on the CPU with CUDA hidden from its driver and its trials (the base
    and its losses, cached by the first, are the second's too: only where the trials train differs); None for a
    sweep with no time left."""
    sides: dict[str, Any] = {}
    for side, spec in specs.items():
        if deadline - time.monotonic() < MIN_PICK_S:
            print(f"gpu_sweep: the pick check's {side} sweep not run: no time left of --pick-time-limit", flush=True)
            sides[side] = None
            continue
        hidden = {} if side == "gpu" else {"CUDA_VISIBLE_DEVICES": ""}
        ran = run_sweep(work, f"pick-{side}", env=env | hidden, deadline=deadline)
        sides[side] = asdict(pick_side(ran, spec))
    return sides


def _write(path: Path | None, figures: dict[str, Any]) -> None:
    if path is not None:  # rewritten after every sweep: a run stopped early keeps what it measured
        path.write_text(json.dumps(figures, indent=2, default=str) + "\n")


if __name__ == "__main__":
    sys.exit(main())
