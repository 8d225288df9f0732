"""The GPU check's closing line: the tests passed, the entry's per-layer ratio to bare PyTorch, the optimizer
step's time, whether Adam's step count survived megatron-core's save and load, and the 1B proxy trial's ratio to
its bare loop, MFU and peak memory against the estimate, on one GPU and sharded over all of them.

    python benchmarks/gpu_check_summary.py LOG_DIR      # reads gpu-tests.xml and the benchmarks' JSON there

Either file may be missing (a part stopped at its time limit); the line then says so.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

TESTS_XML = "gpu-tests.xml"
BENCHMARK_JSON = "full-run-benchmark.json"
PROXY_JSON = "proxy-trial-benchmark.json"
RESUME_TEST = "test_the_step_count_and_the_moments_survive_megatron_cores_own_save_and_load"


def summary(log_dir: Path) -> str:
    parts = [*_tests(log_dir / TESTS_XML), *_benchmark(log_dir / BENCHMARK_JSON), _proxy(log_dir / PROXY_JSON)]
    return "gpu_check: " + "; ".join(parts)


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


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} LOG_DIR")
    print(summary(Path(sys.argv[1])))
