"""The GPU check's closing line: the tests passed, an evaluation's cost against a training iteration and the watch's
last line, the entry's per-layer ratio to bare PyTorch, the optimizer
step's time, whether Adam's step count survived megatron-core's save and load, the 1B proxy trial's ratio to
its bare loop, MFU and peak memory against the estimate, on one GPU and sharded over all of them, and the sweep's
trials per hour at each share of a GPU.

    python benchmarks/gpu_check_summary.py LOG_DIR [PART ...]   # reads gpu-tests.xml and the benchmarks' JSON there

PART: the parts benchmarks/gpu_check.sh ran (tests, evaluation, sweep, pick, proxy, full-run; default all). A part's file may be
missing (it stopped at its time limit); the line then says so.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

TESTS_XML = "gpu-tests.xml"
BENCHMARK_JSON = "full-run-benchmark.json"
PROXY_JSON = "proxy-trial-benchmark.json"
SWEEP_JSON = "gpu-sweep.json"
PICK_JSON = "gpu-pick.json"
EVALUATION_JSON = "evaluation.json"
PARTS = ("tests", "evaluation", "sweep", "pick", "proxy", "full-run")
RESUME_TEST = "test_the_step_count_and_the_moments_survive_megatron_cores_own_save_and_load"


def summary(log_dir: Path, parts: tuple[str, ...] = PARTS) -> str:
    """The closing line of the `parts` that ran."""
    shown = {
        "tests": lambda: _tests(log_dir / TESTS_XML),
        "evaluation": lambda: [_evaluation(log_dir / EVALUATION_JSON)],
        "full-run": lambda: _benchmark(log_dir / BENCHMARK_JSON),
        "proxy": lambda: [_proxy(log_dir / PROXY_JSON)],
        "sweep": lambda: [_sweep(log_dir / SWEEP_JSON)],
        "pick": lambda: [_pick(log_dir / PICK_JSON)],
    }
    return "gpu_check: " + "; ".join(line for part in shown if part in parts for line in shown[part]())


def _tests(path: Path) -> list[str]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return ["tests: no result (stopped at the time limit, or pytest did not start)", "resume step check: not run"]
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    count = {key: sum(int(suite.get(key, 0)) for suite in suites) for key in ("tests", "failures", "errors", "skipped")}
    passed = count["tests"] - count["failures"] - count["errors"] - count["skipped"]
    tests = f"tests {passed} passed, {count['failures'] + count['errors']} failed, {count['skipped']} skipped"
    return [tests, _resume_check(root)]


def _resume_check(root: ET.Element) -> str:
    case = next((case for case in root.iter("testcase") if case.get("name") == RESUME_TEST), None)
    if case is None:
        return "resume step check: not run"
    if case.find("skipped") is not None:
        return "resume step check: skipped"
    verdict = "FAILED" if case.find("failure") is not None or case.find("error") is not None else "passed"
    properties = {prop.get("name"): prop.get("value") for prop in case.iter("property")}
    alone = properties.get("adam_step_after_megatron_core_load")
    restored = properties.get("adam_step_after_finish_load")
    if alone is None:
        return f"resume step check {verdict}"
    return f"resume step check {verdict} (megatron-core's load alone left step {alone}, finish_load {restored})"


def _evaluation(path: Path) -> str:
    try:
        found = json.loads(path.read_text())
        cost = found["evaluation_in_steps"]
        watched = found["watch_lines"]
    except (OSError, ValueError, KeyError, TypeError):
        return "full-run evaluation: no figures (stopped at the time limit, or failed)"
    shown = "not timed" if cost is None else f"{cost:.2f} training iterations each"
    last = watched[-1].removeprefix("watch ") if watched else "no evaluation watched"
    return f"full-run evaluation of {len(found['sets'])} sets: {shown}; last: {last}"


def _benchmark(path: Path) -> list[str]:
    try:
        rows = json.loads(path.read_text())
    except (OSError, ValueError):
        return ["benchmark: no figures (stopped at the time limit before its first row, or failed)"]
    layers = [f"{row['shape']} {row['ratio']:.2f}" for row in rows if row["what"].startswith("one layer")]
    optimizer = [f"{row['shape']} {row['seconds'] * 1e3:.1f} ms" for row in rows if row["what"].startswith("optimizer")]
    return [
        "entry / bare per layer: " + (", ".join(layers) or "not measured"),
        "optimizer step: " + (", ".join(optimizer) or "not measured"),
    ]


def _proxy(path: Path) -> str:
    try:
        rows = json.loads(path.read_text())
    except (OSError, ValueError):
        return "1B proxy trial: no figures (stopped at the time limit before its first row, or failed)"
    shown = [
        f"{row['what']} on {row['gpus']}: {row['ratio']:.2f} of bare, MFU {row['trial_mfu']:.0%}, "
        f"peak {row['trial_peak_gb']:.1f} GB per GPU (estimated {row['estimate_gb']:.1f})"
        for row in rows
    ]
    return "1B proxy trial: " + ", ".join(shown)


def _sweep(path: Path) -> str:
    try:
        shown = sweep_line(json.loads(path.read_text())["sweeps"])
    except (OSError, ValueError, KeyError, TypeError):
        return "sweep on the GPU: no figures (stopped at the time limit before its first sweep ended, or failed)"
    return f"sweep on the GPU: {shown}"


def _pick(path: Path) -> str:
    try:
        check = json.loads(path.read_text())["pick_check"]
    except (OSError, ValueError, KeyError, TypeError):
        return "pick check GPU vs CPU: no figures (stopped at the time limit, or failed)"
    return pick_line(check)


def sweep_line(sweeps: list[dict]) -> str:
    """Each sweep's trials per hour (and against a whole GPU per trial's), its card MFU, and whether the picks agree;
    `sweeps` as benchmarks/gpu_sweep.py writes them."""
    if not sweeps:
        return "no sweep ran"
    whole = next((sweep["trials_per_hour"] for sweep in sweeps if sweep["gpus_per_trial"] == 1), None)
    shown = []
    for sweep in sweeps:
        rate = sweep["trials_per_hour"]
        line = f"{sweep['gpus_per_trial']:g} GPU per trial {'-' if rate is None else f'{rate:.0f}'}"
        if rate and whole and sweep["gpus_per_trial"] != 1:
            line += f" ({rate / whole:.2f}x)"
        if sweep["card_mfu"] is not None:
            line += f", card MFU {sweep['card_mfu']:.0%}"
        if sweep["stopped"]:
            line += ", stopped at the time limit"
        shown.append(line)
    picks = [sweep["pick"] for sweep in sweeps]
    agree = (
        f"the same pick in every sweep: {picks[0]}"
        if len(set(picks)) == 1
        else "picks differ: " + ", ".join(f"{sweep['gpus_per_trial']:g}: {sweep['pick']}" for sweep in sweeps)
    )
    return "trials/hour at " + ", ".join(shown) + "; " + agree


def pick_line(check: dict | None) -> str:
    """Whether the pick check's sweep with its trials on the GPU picked what the one with its trials on the CPU did;
    `check` as benchmarks/gpu_sweep.py writes it."""
    if not check or not all(check.get(side) for side in ("gpu", "cpu")):
        return "pick check GPU vs CPU: not run (the time ran out before it)"
    sides = {side: check[side] for side in ("gpu", "cpu")}
    unfinished = [f"the {side.upper()} sweep {_unfinished(sweep)}" for side, sweep in sides.items()
                  if _unfinished(sweep)]  # fmt: skip
    if unfinished:
        return "pick check GPU vs CPU: no answer: " + ", ".join(unfinished)
    gpu, cpu = sides["gpu"]["pick"], sides["cpu"]["pick"]
    verdict = f"the same pick: {gpu}" if gpu == cpu else f"different picks: GPU {gpu}, CPU {cpu}"
    return f"pick check GPU (gpus {sides['gpu']['gpus_per_trial']:g}) vs CPU: {verdict}"


def _unfinished(sweep: dict) -> str:
    """How a sweep that gave no pick ended; empty for one that ran to its end."""
    if sweep["stopped"]:
        return "stopped at the time limit"
    return f"exited {sweep['exit_code']}" if sweep["exit_code"] != 0 else ""


if __name__ == "__main__":
    if len(sys.argv) < 2 or not set(sys.argv[2:]) <= set(PARTS):
        sys.exit(f"usage: {sys.argv[0]} LOG_DIR [PART ...], PART one of {', '.join(PARTS)}")
    print(summary(Path(sys.argv[1]), tuple(sys.argv[2:]) or PARTS))
