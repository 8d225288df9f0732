"""Runs a sharded trial on N local processes, as Ray Train or torchrun would start its workers.

Each worker joins a process group over a file store in the test's folder (no port to collide on), runs
`run_sharded_trial` with a scripted report on rank 0, and writes what it returned (or why it failed) for the
test to read. Lives in a module of its own: torch.multiprocessing's spawn imports the worker function by name.
"""

from __future__ import annotations

import json
import traceback
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from train_entry.trial_config import Metrics, TrialConfig, TrialResult


class ScriptedReport:
    """Records each report in order; stops the trial at `stop_at`, raises (a crash) at `crash_at`."""

    def __init__(self, log: Path, *, stop_at: int | None = None, crash_at: int | None = None) -> None:
        self.log, self.stop_at, self.crash_at = log, stop_at, crash_at

    def __call__(self, metrics: Metrics) -> bool:
        with self.log.open("a") as out:
            out.write(f"{metrics.step}\n")
        if metrics.step == self.crash_at:
            raise RuntimeError(f"crashed at step {metrics.step}")
        return metrics.step == self.stop_at


def _worker(rank: int, size: int, folder: str, config_json: str, report: ScriptedReport, backend: str) -> None:
    from train_entry.sharded.trial import run_sharded_trial

    out = Path(folder) / f"rank{rank}.json"
    store = dist.FileStore(str(Path(folder) / "store"), size)
    if backend == "nccl":
        torch.cuda.set_device(rank)  # as Ray Train and torchrun do: one GPU per worker, made current
    # A worker left waiting on one that crashed gives up within a minute, not the default ten (NCCL) or thirty.
    dist.init_process_group(backend, store=store, rank=rank, world_size=size, timeout=timedelta(seconds=60))
    try:
        result = run_sharded_trial(TrialConfig.model_validate_json(config_json), report)
        out.write_text(result.model_dump_json())
    except Exception as error:  # noqa: BLE001 - whatever ended the worker is what the test reads
        out.write_text(json.dumps({"error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()}))
    finally:
        dist.destroy_process_group()


def run_workers(
    config: TrialConfig, folder: Path, report: ScriptedReport, *, size: int = 2, backend: str = "gloo"
) -> list[TrialResult | str]:
    """Each worker's result, or the error it ended with, by rank (gloo on CPU, or NCCL with a GPU per worker)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "store").unlink(missing_ok=True)
    mp.start_processes(
        _worker, args=(size, str(folder), config.model_dump_json(), report, backend), nprocs=size, start_method="spawn"
    )
    results: list[TrialResult | str] = []
    for rank in range(size):
        written = json.loads((folder / f"rank{rank}.json").read_text())
        results.append(written["error"] if "error" in written else TrialResult.model_validate(written))
    return results
