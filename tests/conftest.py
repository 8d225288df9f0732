"""Fixtures shared by every test tier: a session cache and a tiny spec over cut-down bundled corpora."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from tests.wandb_files import UNREACHABLE_WANDB, WANDB_SECRET

REPO = Path(__file__).resolve().parents[1]
SHIPPED_SPECS = sorted((REPO / "search_spaces").glob("*.yaml"))
"""The specs the repository ships; a test parametrized over them fails at collection if there are none."""
DATA = REPO / "data"

# One thread per process: the suite runs one pytest-xdist worker per core (-n 2 in pyproject.toml), and a second torch
# thread in each would only spin against the other worker's (~15 % more CPU for the same tests). The sweeps and base
# pretraining the tests start as subprocesses inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

TINY_CORPORA = {
    # (bundled file, documents kept): enough text for a 512-token BPE and a few hundred steps.
    "general_en/train.jsonl": 150,
    "general_en/valid.jsonl": 20,
    "general_multi/train.jsonl": 30,
    "general_multi/valid.jsonl": 5,
    "ecommerce/train.jsonl": 500,
    "ecommerce/valid.jsonl": 40,
}

TINY_SPEC: dict[str, Any] = {
    "base": {
        "model": "builtin:tiny-llama",
        "max_lr": 3.0e-3,
        "builtin": {
            "vocab_size": 512,
            "hidden_size": 64,
            "num_layers": 2,
            "num_heads": 2,
            "num_kv_heads": 1,
            "intermediate_size": 176,
            "pretrain_steps": 300,
            "batch_size": 8,
            "seq_len": 64,
            "warmup_steps": 20,
        },
    },
    "data": {
        "domain": {"train": "corpora/ecommerce/train.jsonl", "valid": "corpora/ecommerce/valid.jsonl"},
        "general": {"train": "corpora/general_en/train.jsonl", "valid": "corpora/general_en/valid.jsonl"},
        "non_english": {
            "train": "corpora/general_multi/train.jsonl",
            "valid": "corpora/general_multi/valid.jsonl",
            "share": 0.1,
        },
    },
    "proxy": {
        "steps": 40,
        "seq_len": 64,
        "batch_size": 4,
        "warmup_steps": 4,
        "eval_interval": 20,
        "eval_sequences": 16,
    },
    "space": {"lr_fraction": {"low": 0.05, "high": 0.2}, "mix": ["4:1", "1:1", "1:4"]},
    "objective": {"forgetting_budget": 0.02},
    # No pruner: 4 trials of 40 steps leave the default median pruner (4 startup trials) nothing it could prune, and
    # a pruner that cannot act is warned about (sweep/spec/inert.py); the tests that prune set their own.
    "search": {"num_trials": 4, "pruner": {"type": "none"}, "replicates": {"top": 0}, "confirmation": {"seeds": 0}},
    # One trial process at a time: a second one (a Ray worker importing torch and megatron-core) costs a tiny
    # sweep ~17 s more CPU (64 vs 46 s), far more than its trials; sweeps that test trials side by side ask for it.
    "execution": {"concurrency": 1, "cpus": 1},
    # No W&B: the session sets WANDB_MODE=offline, which overrides a spec's `mode: disabled` (as it would a user's),
    # so only leaving tracking.wandb out keeps W&B from every trial (its import, service and files: ~2 s of CPU per
    # trial process). The tests of tracking ask for it.
    "tracking": {},
}


def run_folder(tmp_path_factory) -> Path:
    """The test run's own base folder, shared by all of its pytest-xdist workers (each has its own below it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory) -> Path:
    """One cache (tokenizers, indexed corpora, bases) for the whole test run, never ~/.cache. The xdist
    workers share it: its entries are content-addressed and renamed into place whole (train_entry.data.cache),
    so a base one worker pretrained is found by the other."""
    root = run_folder(tmp_path_factory) / "cpt-sweep-cache"
    root.mkdir(exist_ok=True)
    previous = os.environ.get("CPT_SWEEP_CACHE")
    os.environ["CPT_SWEEP_CACHE"] = str(root)
    os.environ.setdefault("WANDB_MODE", "offline")
    yield root
    if previous is None:
        os.environ.pop("CPT_SWEEP_CACHE", None)
    else:
        os.environ["CPT_SWEEP_CACHE"] = previous


TINY_MTIME_NS = 1_767_225_600 * 10**9
"""Every worker's copy of a tiny corpus bears this mtime (2026-01-01): a corpus's cache key reads its files' sizes,
mtimes and sampled blocks (train_entry/data/fingerprint.py), so the workers' copies are one corpus to the session's
cache, and its tokenizer, samples, tiny base and base losses are built by one worker and read by the other, not
built once on each (~16 s of CPU for the base's alone)."""


@pytest.fixture(scope="session")
def tiny_corpora(tmp_path_factory) -> Path:
    """The first documents of each bundled corpus, under <dir>/corpora/ (a folder of this worker's own: the tests write
    their specs beside it)."""
    root = tmp_path_factory.mktemp("tiny-data")
    for name, documents in TINY_CORPORA.items():
        target = root / "corpora" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        with (DATA / name).open("rb") as source:
            target.write_bytes(b"".join(line for _, line in zip(range(documents), source)))
        os.utime(target, ns=(TINY_MTIME_NS, TINY_MTIME_NS))
    return root


def write_spec(root: Path, name: str, **overrides: dict[str, Any]) -> Path:
    """The tiny spec with {section: {key: value}} overrides, written to root/name."""
    spec = {section: dict(values) for section, values in TINY_SPEC.items()}
    for section, values in overrides.items():
        spec[section] = {**spec.get(section, {}), **values}
    path = root / name
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.fixture
def write_tiny_spec(tiny_corpora) -> Callable[..., Path]:
    """write_tiny_spec(name, **overrides) -> path of a tiny spec beside the tiny corpora."""
    return lambda name="tiny.yaml", **overrides: write_spec(tiny_corpora, name, **overrides)


@pytest.fixture(scope="session")
def tiny_spec_path(tiny_corpora) -> Path:
    return write_spec(tiny_corpora, "tiny.yaml")


@pytest.fixture
def tiny_spec(tiny_spec_path) -> Path:
    return tiny_spec_path


@contextmanager
def once_per_session(tmp_path_factory, name: str) -> Iterator[Path]:
    """A folder every pytest-xdist worker of this run shares, held under a lock while a session fixture fills it:
    the first worker to ask runs the sweep, the others wait for it and read the same run directory."""
    shared = run_folder(tmp_path_factory)
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield shared / name


@pytest.fixture(scope="session")
def scripted_ladder_run(tiny_corpora, tmp_path_factory) -> Path:
    """runs/ladder/ of one ladder of scripted rungs (tests/sweep/ladder/ladder_runs.py): stopped after its second rung (that
    ladder.json kept as ../../stopped.json), then run again to its end. Read it, or copy it to change it."""
    from tests.sweep.ladder.ladder_runs import stopped_then_finished, write_ladder_spec

    with once_per_session(tmp_path_factory, "scripted-ladder") as root:
        run = root / "runs" / "ladder"
        if not (run / "ladder.json").is_file() or not (root / "finished").is_file():
            spec = write_ladder_spec(lambda name, **overrides: write_spec(tiny_corpora, name, **overrides),
                                     "scripted_ladder.yaml")  # fmt: skip
            stopped_then_finished(spec, root)
            (root / "finished").touch()
    return run


@pytest.fixture(scope="session")
def wandb_sweep(tiny_corpora, tmp_path_factory) -> Path:
    """The run directory of one finished tiny sweep tracked in W&B, whose runs tests read back.

    It runs on a local multi-node Ray cluster whose head has no CPUs, so every trial runs on
    another node. W&B is online with an API key only the driver has, against a W&B server that
    is not there: a trial without the key would fail (W&B refuses online without one); with it,
    W&B cannot connect and the trial logs offline, so its files can be read back. A zero
    forgetting budget and guard margin: the 1:4 mixes forget at once and are pruned, the 4:1
    mixes (mostly the base's own general text) run their full budget; the seeded sampler draws both.
    """
    spec = write_spec(
        tiny_corpora,
        "wandb_sweep.yaml",
        space={"lr_fraction": {"low": 0.05, "high": 0.2}, "mix": ["4:1", "1:4"]},
        search={"num_trials": 4, "sampler": "random", "forgetting_guard": {"margin": 0.0, "min_steps": 1}},
        objective={"forgetting_budget": 0.0},
        execution={"concurrency": 2},  # a trial on each node at once
        tracking={"wandb": {"mode": "online", "project": "cpt-sweep-tests"}},
    )
    with once_per_session(tmp_path_factory, "wandb-sweep") as cwd:
        run_dir = cwd / "runs" / "wandb_sweep"
        if not (run_dir / "best.json").is_file():
            cwd.mkdir(exist_ok=True)
            _run_on_a_local_cluster(spec, cwd)
    return run_dir


def _run_on_a_local_cluster(spec: Path, cwd: Path) -> None:
    from sweep.promote.launch.local_cluster import ClusterShape, LocalCluster

    with pytest.MonkeyPatch.context() as patch:
        for name in ("WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_MODE"):
            patch.delenv(name, raising=False)  # the nodes start without them
        patch.setenv("WANDB_INIT_TIMEOUT", "3")  # not a secret: the nodes have it from their own start
        with LocalCluster(shape=ClusterShape(nodes=2, cpus_per_node=1)):
            done = subprocess.run(
                [sys.executable, "-m", "cli", "run", str(spec), "--address", "auto"],
                check=False,
                cwd=cwd,
                env={**os.environ, "WANDB_API_KEY": WANDB_SECRET, "WANDB_BASE_URL": UNREACHABLE_WANDB},
                capture_output=True,
                text=True,
                timeout=600,
            )
    assert done.returncode == 0, done.stdout + done.stderr


@dataclass(frozen=True, kw_only=True)
class FinishedSweep:
    run_dir: Path
    output: str
    """What `sweep run` printed."""
    spec: Path
    """The spec it swept, beside the corpora of the worker that ran it."""


@pytest.fixture(scope="session")
def tiny_sweep(tiny_corpora, tmp_path_factory) -> FinishedSweep:
    """The tiny spec swept end to end by `sweep run` on a Ray of its own, which writes the report
    when it ends: one sweep that the sweep, status and report tests all read. Its 4 trials are followed
    by one replicate (trial 4) of the best point, with seed 1, and one confirmation trial of the pick (trial 5) at
    seed 2, on the one draw the tiny corpora's 25 general validation documents leave beside the pool (a second
    candidate's draw would hold 6: refused, train_entry.data.draws.MIN_DOCUMENTS)."""
    search = {"num_trials": 4, "replicates": {"top": 1}, "confirmation": {"seeds": 1, "candidates": 1}}
    spec = write_spec(tiny_corpora, "tiny_sweep.yaml", search=search)
    with once_per_session(tmp_path_factory, "tiny-sweep") as root:
        output = root / "output.txt"
        if not output.is_file():
            root.mkdir(exist_ok=True)
            done = subprocess.run(
                [sys.executable, "-m", "cli", "run", str(spec)],
                cwd=root,
                check=False,  # the assertion below shows the output
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, done.stdout + done.stderr
            (root / "spec.txt").write_text(str(spec))
            output.write_text(done.stdout)
        swept = Path((root / "spec.txt").read_text())
        return FinishedSweep(run_dir=root / "runs" / "tiny_sweep", output=output.read_text(), spec=swept)


def pytest_addoption(parser):
    parser.addoption(
        "--reproduce",
        action="store_true",
        help="also run the tests marked reproduce, which rebuild shipped files from scratch (the built-in base: "
        "~8 min on 2 cores, beyond the suite's budget)",
    )
    parser.addoption(
        "--law-coverage",
        action="store_true",
        help="also run the tests marked law_coverage: 30 draws of each known law through the law's fit (~15 min of "
        "CPU, beyond the suite's budget; benchmarks/law_coverage.py records the same figures)",
    )


SESSION_SWEEPS = {"tiny_sweep", "wandb_sweep"}
"""The session fixtures that run a sweep once for every worker (once_per_session)."""


def pytest_collection_modifyitems(config, items):
    items[:] = scheduled(items)
    skips = {
        "reproduce": None if config.getoption("--reproduce") else pytest.mark.skip(reason="needs --reproduce"),
        "law_coverage": None if config.getoption("--law-coverage") else pytest.mark.skip(reason="needs --law-coverage"),
        "gpu": None if torch.cuda.is_available() else pytest.mark.skip(reason="needs CUDA"),
    }
    for item in items:
        for marker, skip in skips.items():
            if skip is not None and marker in item.keywords:
                item.add_marker(skip)


def scheduled(items: list[pytest.Item]) -> list[pytest.Item]:
    """The slow tests first, so that the minutes-long sweeps start at once on every xdist worker and the short tests
    fill in around them, instead of one long sweep starting last while the other workers have nothing left to do.

    xdist hands the first worker the first two tests, the second worker the next two, then each worker one more test
    whenever it finishes one (--maxschedchunk 1). The first two are tests that read the session's sweeps, the one
    reading the most of them first: the first worker runs those sweeps while the second starts on slow tests that need
    none, instead of waiting a minute for the sweeps' lock. The other tests that read them come after every other
    slow test, when the sweeps are done."""
    slow = [item for item in items if "slow" in item.keywords]
    shared = sorted((item for item in slow if _sweeps_read(item)), key=lambda item: -len(_sweeps_read(item)))
    alone = [item for item in slow if item not in shared]
    fast = [item for item in items if "slow" not in item.keywords]
    return [*shared[:2], *alone, *shared[2:], *fast]


def _sweeps_read(item: pytest.Item) -> set[str]:
    return SESSION_SWEEPS & set(getattr(item, "fixturenames", ()))
