"""benchmarks/gpu_check.sh on what a CPU machine can check: its wheel list holds every package the GPU tests and the GPU
sweep import, it joins a wheel carried in parts and installs it, it refuses a machine without CUDA in one line, and its
summary line reads what the parts left."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from gpu_check_summary import RESUME_TEST, summary

TORCH_BRINGS = {"torch", "filelock", "fsspec", "jinja2", "markupsafe", "mpmath", "networkx", "setuptools", "sympy"}
TORCH_BRINGS |= {"triton", "typing-extensions"}
"""torch's own wheel requires these: a machine with torch has them."""
GPU_PATHS = [
    # What the gpu tests import, and what their code imports only when it runs on a GPU.
    "train_entry.megatron.train", "train_entry.megatron.throughput", "train_entry.proxy", "train_entry.pretrain",
    "train_entry.builtin_base", "sweep.run.prepare", "sweep.promote.launch.promotion", "cli.promote", "full_run_gpu",
    "proxy_trial_gpu", "train_entry.sharded.trial",
    # What gpu_sweep.py's `sweep run` imports: its driver (Ray Tune, Optuna), trials, pick and report.
    "gpu_sweep", "cli.run", "sweep.run.driver", "sweep.run.trainable", "sweep.choice.surrogate", "reports.report",
    "sklearn.gaussian_process",  # the surrogate's, imported when it fits
]  # fmt: skip
IMPORTED = """
import importlib, importlib.metadata as md, json, os, sys
import pytest, transformers
for name in sys.argv[1:]:
    importlib.import_module(name)
transformers.LlamaForCausalLM, transformers.PreTrainedTokenizerFast
owner = {}
for dist in md.distributions():
    name, root = dist.metadata["Name"], str(dist.locate_file(""))
    for file in dist.files or []:
        owner[os.path.normpath(os.path.join(root, file))] = (name, root)
modules = list(sys.modules.values())
files = {os.path.normpath(module.__file__) for module in modules if getattr(module, "__file__", None)}
print(json.dumps(sorted(owner[path] for path in files if path in owner)))
"""


def pinned() -> dict[str, str]:
    lines = (BENCHMARKS / "gpu-check-requirements.txt").read_text().splitlines()
    requirements = [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]
    assert all(len(req.specifier) == 1 and next(iter(req.specifier)).operator == "==" for req in requirements)
    return {canonicalize_name(req.name): str(req.specifier) for req in requirements}


def test_the_wheel_list_holds_every_package_the_gpu_tests_import_and_what_those_require():
    gpu_tests = sorted(
        str(path.relative_to(REPO).with_suffix("")).replace("/", ".")
        for path in (REPO / "tests").rglob("test_*.py")
        if "mark.gpu" in path.read_text()
    )
    assert "tests.train_entry.megatron.test_optimizer_resume_gpu" in gpu_tests
    conftests = ["tests.conftest", "tests.train_entry.megatron.conftest", "tests.sweep.conftest"]
    paths = [str(REPO), str(BENCHMARKS), str(REPO / "tests/sweep"), str(REPO / "tests/sweep/promote")]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    output = subprocess.run(
        [sys.executable, "-c", IMPORTED, *conftests, *gpu_tests, *GPU_PATHS],
        capture_output=True, text=True, check=True, cwd=REPO, env=environment, timeout=300,
    ).stdout  # fmt: skip
    imported = {
        canonicalize_name(name)
        for name, location in json.loads(output.splitlines()[-1])
        if f"setuptools{os.sep}_vendor" not in location  # setuptools brings its own
    }
    listed = pinned()
    # The eval extra (lm-evaluation-harness, which the test setup installs) is not on the GPU machine's list: torch
    # and transformers import some of what it brings (dill, accelerate) only because they find it installed.
    missing = imported - listed.keys() - TORCH_BRINGS - {"cpt-sweep"} - eval_extra_only()
    assert not missing, f"benchmarks/gpu-check-requirements.txt lacks {sorted(missing)}"
    # What the listed packages require, read from the versions installed here: a fresh install resolves against the
    # live package registry, which has released newer versions of some pins since the list was written (pandas 3.1.2
    # between two installs an hour apart, 2026-12-07), and the pins' own metadata is not on this machine. A release
    # that adds a requirement is asked for here as the suite imports it (transformers 5.25's kernels). The eval
    # extra's displaced packages (below) and listed packages no longer installed here (their pins still need them)
    # are left out.
    needed_by_listed = {
        canonicalize_name(requirement.name)
        for name in listed.keys() - DISPLACED_BY_EVAL
        if _installed(name) is not None
        for text in _requires(name)
        if (requirement := Requirement(text)).marker is None or requirement.marker.evaluate(PY312_LINUX)
    }
    missing = {
        name for name in needed_by_listed - listed.keys() - TORCH_BRINGS - eval_extra_only()
        if not name.startswith("nvidia-")
    }  # fmt: skip
    assert not missing, f"benchmarks/gpu-check-requirements.txt lacks what its packages require: {sorted(missing)}"


PY312_LINUX = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux", "extra": ""}
PY312_LINUX |= {"platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython"}
PY312_LINUX |= {"platform_python_implementation": "CPython", "os_name": "posix"}


def eval_extra_only() -> set[str]:
    """The distributions cpt-sweep's `eval` extra brings that its own requirements do not; and six, which
    python-dateutil imports below version 3, where the extra's typepy[datetime] pins it (the list's 4.0.0 needs none)."""
    return _closure(_project_requirements("eval")) - _closure(_project_requirements("")) | {"six"}


def _project_requirements(extra: str) -> list[Requirement]:
    """cpt-sweep's own requirements (`extra` ""), or those of one of its extras."""
    return [
        requirement
        for text in _requires("cpt-sweep")
        if (requirement := Requirement(text)).marker is None and not extra
        or requirement.marker is not None and extra and requirement.marker.evaluate(PY312_LINUX | {"extra": extra})
    ]


def _closure(requirements: list[Requirement]) -> set[str]:
    """The distributions `requirements` name and everything those require (with the extras asked for), installed
    here, on Linux and Python 3.12."""
    import importlib.metadata

    seen: set[tuple[str, str]] = set()
    todo = [(canonicalize_name(r.name), extra) for r in requirements for extra in ("", *r.extras)]
    while todo:
        name, extra = todo.pop()
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        try:
            texts = _requires(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # required on another platform only
        for text in texts:
            requirement = Requirement(text)
            if requirement.marker is None and not extra or requirement.marker is not None and requirement.marker.evaluate(
                PY312_LINUX | {"extra": extra}
            ):
                todo += [(canonicalize_name(requirement.name), e) for e in ("", *requirement.extras)]
    return {name for name, _ in seen}


DISPLACED_BY_EVAL = {"python-dateutil", "tzdata"}
"""Listed packages a test install (`.[test,eval]`) holds at another version or not at all: python-dateutil, pinned
below 3 by the eval extra's typepy[datetime], and tzdata, which only the list's python-dateutil 4.0.0 requires."""


def _installed(name: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _requires(name: str) -> list[str]:
    import importlib.metadata

    return importlib.metadata.distribution(name).requires or []


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks what a machine without CUDA answers")
def test_without_cuda_the_check_stops_in_its_preflight_in_one_line(tmp_path):
    result = subprocess.run(
        ["bash", str(BENCHMARKS / "gpu_check.sh"), str(tmp_path / "log")],
        check=False, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHON": sys.executable, "WHEELS": str(tmp_path / "no-wheels")},
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"gpu_check: the torch of {sys.executable} sees no CUDA GPU; run this on a GPU machine"
    )
    assert not (tmp_path / "log" / "gpu-tests.xml").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="stops at the preflight only where there is no CUDA")
def test_a_wheel_carried_in_parts_in_two_folders_is_joined_and_installed_before_the_preflight(tmp_path):
    wheel = _probe_wheel()
    half = len(wheel) // 2
    for folder, suffix, piece in (("call-1", "aa", wheel[:half]), ("call-2", "ab", wheel[half:])):
        (tmp_path / "wheels" / folder).mkdir(parents=True)
        (tmp_path / "wheels" / folder / f"{PROBE_WHEEL}.part-{suffix}").write_bytes(piece)
    result = subprocess.run(
        ["bash", str(BENCHMARKS / "gpu_check.sh"), str(tmp_path / "log")],
        check=False, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHON": sys.executable, "WHEELS": str(tmp_path / "wheels"), "HOME": str(tmp_path)},
    )  # fmt: skip
    assert result.returncode == 2 and "sees no CUDA GPU" in result.stderr  # after the install
    assert (tmp_path / "wheels" / PROBE_WHEEL).read_bytes() == wheel
    assert (tmp_path / "gpu-site" / "cpt_sweep_probe" / "__init__.py").read_text() == "VALUE = 1\n"


@pytest.mark.skipif(torch.cuda.is_available(), reason="stops at the preflight only where there is no CUDA")
def test_a_wheel_whose_parts_have_not_all_come_is_left_out_and_the_whole_ones_installed(tmp_path):
    wheel = _probe_wheel()
    (tmp_path / "wheels" / "call-1").mkdir(parents=True)
    (tmp_path / "wheels" / "call-1" / PROBE_WHEEL).write_bytes(wheel)
    (tmp_path / "wheels" / "call-1" / f"ray-2.60.0-cp312-none-any.whl.part-aa").write_bytes(wheel[:100])
    result = subprocess.run(
        ["bash", str(BENCHMARKS / "gpu_check.sh"), str(tmp_path / "log")],
        check=False, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHON": sys.executable, "WHEELS": str(tmp_path / "wheels"), "HOME": str(tmp_path)},
    )  # fmt: skip
    assert "gpu_check: ray-2.60.0-cp312-none-any.whl: its 1 part(s) under" in result.stderr
    assert "do not make a whole wheel yet; left out" in result.stderr
    assert result.returncode == 2 and "sees no CUDA GPU" in result.stderr  # after the install of the whole one
    assert (tmp_path / "gpu-site" / "cpt_sweep_probe" / "__init__.py").exists()
    assert sorted(path.name for path in (tmp_path / "wheels").rglob("ray-*")) == ["ray-2.60.0-cp312-none-any.whl.part-aa"]


PROBE_WHEEL = "cpt_sweep_probe-1.0-py3-none-any.whl"


def _probe_wheel() -> bytes:
    """A wheel of one module, as pip installs it offline."""
    files = {
        "cpt_sweep_probe/__init__.py": "VALUE = 1\n",
        "cpt_sweep_probe-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: cpt-sweep-probe\nVersion: 1.0\n",
        "cpt_sweep_probe-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files["cpt_sweep_probe-1.0.dist-info/RECORD"] = "".join(
        f"{name},,\n" for name in [*files, "cpt_sweep_probe-1.0.dist-info/RECORD"]
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def test_the_summary_line_reads_the_tests_and_the_benchmark_rows(tmp_path):
    (tmp_path / "gpu-tests.xml").write_text(
        '<testsuites><testsuite tests="12" failures="1" errors="0" skipped="2">'
        f'<testcase name="{RESUME_TEST}"><properties><property name="adam_step_after_megatron_core_load" value="1"/>'
        '<property name="adam_step_after_finish_load" value="3"/></properties></testcase>'
        '<testcase name="test_other"><failure message="x"/></testcase></testsuite></testsuites>'
    )
    rows = [
        {"shape": "0.5B", "what": "one layer, micro-batch 4 x 2048", "ratio": 0.912, "seconds": 0.004},
        {"shape": "0.5B", "what": "optimizer step, 0.62 B parameters", "ratio": None, "seconds": 0.0123},
        {"shape": "0.5B", "what": "whole iteration, 8 micro-batches", "ratio": 0.7, "seconds": 0.9},
    ]
    (tmp_path / "full-run-benchmark.json").write_text(json.dumps(rows))
    proxy = [
        {"what": "one GPU", "gpus": 1, "ratio": 0.957, "trial_mfu": 0.412, "trial_peak_gb": 41.23, "estimate_gb": 54.0},
        {
            "what": "sharded (FSDP2)",
            "gpus": 8,
            "ratio": 0.93,
            "trial_mfu": 0.375,
            "trial_peak_gb": 29.0,
            "estimate_gb": 35.73,
        },
    ]
    (tmp_path / "proxy-trial-benchmark.json").write_text(json.dumps(proxy))
    assert summary(tmp_path, ("tests", "proxy", "full-run")) == (  # as `gpu_check.sh DIR tests proxy full-run` ends
        "gpu_check: tests 9 passed, 1 failed, 2 skipped; resume step check passed (megatron-core's load alone left "
        "step 1, finish_load 3); entry / bare per layer: 0.5B 0.91; optimizer step: 0.5B 12.3 ms; 1B proxy trial: "
        "one GPU on 1: 0.96 of bare, MFU 41%, peak 41.2 GB per GPU (estimated 54.0), sharded (FSDP2) on 8: 0.93 of bare, "
        "MFU 38%, peak 29.0 GB per GPU (estimated 35.7)"
    )


def test_the_summary_says_which_part_left_nothing(tmp_path):
    assert summary(tmp_path) == (
        "gpu_check: tests: no result (stopped at the time limit, or pytest did not start); resume step check: not "
        "run; full-run evaluation: no figures (stopped at the time limit, or failed); benchmark: no figures (stopped "
        "at the time limit before its first row, or failed); 1B proxy trial: no figures (stopped at the time limit "
        "before its first row, or failed); sweep on the GPU: no figures (stopped at the time limit before its first "
        "sweep ended, or failed); pick check GPU vs CPU: no figures (stopped at the time limit, or failed)"
    )
    assert summary(tmp_path, ("sweep",)) == (
        "gpu_check: sweep on the GPU: no figures (stopped at the time limit before its first sweep ended, or failed)"
    )


def test_the_pick_part_reads_its_own_file_apart_from_the_sweeps(tmp_path):
    side = {"gpus_per_trial": 0.25, "exit_code": 0, "stopped": False, "wall_s": 77.0, "finished": 6}
    check = {"gpu": side | {"pick": "0.3 @ 1:1 (confirmed)"}, "cpu": side | {"gpus_per_trial": 0.0, "pick": "0.3 @ 1:1 (confirmed)"}}
    (tmp_path / "gpu-pick.json").write_text(json.dumps({"card": {}, "pick_check": check}))
    assert summary(tmp_path, ("pick",)) == "gpu_check: pick check GPU (gpus 0.25) vs CPU: the same pick: 0.3 @ 1:1 (confirmed)"
