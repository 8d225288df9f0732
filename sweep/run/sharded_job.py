"""A proxy trial larger than one process: a Ray Train job of N workers run from inside its Ray Tune trial.

Ray 2.60 runs Ray Train inside Ray Tune as its guide for Train V2 says (the `Tuner(trainer)` form is deprecated):
the Tune trial is the driver that builds a TorchTrainer and calls fit(); the Train workers get their own resources
(one GPU each, or CPU slots under gloo) and Ray Train restarts the whole worker group after a lost worker or node,
up to FailureConfig.max_failures times. Each worker runs train_entry.sharded.trial.run_sharded_trial, which resumes
from the trial's own DCP checkpoint in its output directory, so a restart trains no step twice.

Rank 0's reports must reach the study and Tune from the Tune trial, and the pruner's answer must come back to stop
every worker. Ray's TuneReportCallback passes rank 0's metrics to Tune one way only, so the two talk over a pair of
Ray queues: rank 0 puts each evaluation with an id and waits for the answer to that id (an answer meant for a worker
that has since died is passed over), while the Tune trial answers each with the sweep's report callback, which
records it in the study, asks the pruner and reports it to Tune. Rank 0 sends the finished trial's result the same
way (Ray Train V2 keeps only metrics reported with a checkpoint in its Result, and this job's checkpoints are the
trial's own).

Each worker's output, Python's and the C libraries' (NCCL, gloo) alike, goes to worker_<rank>.log in the trial's
folder rather than to Ray's session logs on whichever node ran it, one file over all the trial's attempts: when each
started, what it resumed from, and the traceback of the one that failed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from queue import Empty
from typing import Any

import ray.train
from ray.exceptions import RayTaskError
from ray.train import FailureConfig, RunConfig, ScalingConfig, WorkerGroupError
from ray.train.torch import TorchConfig, TorchTrainer
from ray.util.queue import Queue

from sweep.spec.trial_scale import Workers
from train_entry.hf_dir import first_line
from train_entry.sharded.checkpoint import CHECKPOINT_DIR
from train_entry.trial_config import Metrics, TrialConfig, TrialResult

Report = Callable[[Metrics], bool]
POLL_S = 0.5
"""How often the Tune trial looks for a report while the job runs: far below an evaluation's interval."""
TRAIN_RUN_DIR = "ray_train"
"""In the trial's output directory: Ray Train's own record of the job."""
RESULT = "result"
"""The request id of rank 0's last message, the trial's result, which is not answered."""
WORKER_LOG = "worker_{rank}.log"
"""In the trial's output directory: what a worker printed, over every attempt of the trial."""
WORKER_LOG_NAME = re.compile(r"worker_\d+\.log")


def run_sharded_job(config: TrialConfig, report: Report, workers: Workers) -> TrialResult:
    """Runs `config` as a Ray Train job of `workers` and returns rank 0's result; `report` answers each evaluation.

    An exception raised by `report` ends the job and is raised here; so is Ray Train's own once it gives up.
    """
    requests, answers = Queue(actor_options={"num_cpus": 0}), Queue(actor_options={"num_cpus": 0})
    # Each worker looks for this file: one on a node that does not share the trial's folder would write its shards
    # where no other worker, nor a resumed trial, finds them.
    shared = Path(config.output_dir) / f".shared-{uuid.uuid4().hex}"
    shared.parent.mkdir(parents=True, exist_ok=True)
    shared.touch()
    trainer = TorchTrainer(
        train_worker,
        train_loop_config={
            "trial": config.model_dump_json(),
            "requests": requests,
            "answers": answers,
            "shared": shared.name,
        },
        scaling_config=ScalingConfig(
            num_workers=workers.count,
            use_gpu=workers.gpus,
            resources_per_worker={"CPU": workers.cpus, **({"GPU": 1} if workers.gpus else {})},
        ),
        torch_config=TorchConfig(backend="nccl" if workers.gpus else "gloo"),
        run_config=RunConfig(
            name=TRAIN_RUN_DIR,
            storage_path=config.output_dir,
            failure_config=FailureConfig(max_failures=workers.max_failures),
            # Ray Train would also pass each print to its logger, which prints it again: twice in a worker's log.
            worker_runtime_env={"env_vars": {"RAY_TRAIN_ENABLE_PRINT_PATCH": "0"}},
        ),
    )
    outcome: dict[str, Any] = {}
    job = threading.Thread(target=_fit, args=(trainer, outcome), name="ray-train-job", daemon=True)
    job.start()
    failed = _answer_reports(job, requests, answers, report, outcome)
    job.join()
    shared.unlink(missing_ok=True)
    if failed is not None:
        raise failed
    if isinstance(outcome.get("error"), WorkerGroupError):
        raise ShardedTrialError(_what_workers_raised(outcome["error"], Path(config.output_dir))) from outcome["error"]
    if "error" in outcome:
        raise outcome["error"]
    return TrialResult.model_validate_json(outcome[RESULT])


class ShardedTrialError(RuntimeError):
    """The trial's workers failed, every restart of them too."""


def _what_workers_raised(error: WorkerGroupError, output_dir: Path) -> str:
    """One line: each distinct error and the ranks Ray Train saw raise it (Ray's own message is their tracebacks), and
    where the workers' whole output is. Ray Train stops the group at the first failure it polls, so a rank that
    raised a moment later is not among them."""
    ranks: dict[str, list[int]] = {}
    for rank, failure in sorted(error.worker_failures.items()):
        cause = failure.cause if isinstance(failure, RayTaskError) and failure.cause is not None else failure
        ranks.setdefault(first_line(cause), []).append(rank)
    raised = "; ".join(f"rank {', '.join(map(str, numbers))}: {what}" for what, numbers in ranks.items())
    return f"{raised} (each worker's output: {output_dir / WORKER_LOG.format(rank='<rank>')})"


def clear_for_retry(output_dir: Path) -> None:
    """Empties a sharded trial's folder for another attempt (Ray Tune's retry, or a rerun of the sweep) but for its
    checkpoint, which the attempt resumes from (a checkpoint is used only whole and of this very trial config,
    train_entry.sharded.checkpoint, so one torn by the crash is passed over), and its workers' logs, which the
    attempt appends to."""
    if not output_dir.is_dir():
        return
    for entry in output_dir.iterdir():
        if entry.name == CHECKPOINT_DIR and entry.is_dir() and not entry.is_symlink():
            continue
        if WORKER_LOG_NAME.fullmatch(entry.name) and entry.is_file() and not entry.is_symlink():
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _fit(trainer: TorchTrainer, outcome: dict[str, Any]) -> None:
    try:
        trainer.fit()
    except Exception as error:  # noqa: BLE001 - raised again by run_sharded_job, in the Tune trial's own thread
        outcome["error"] = error


def _answer_reports(
    job: threading.Thread, requests: Queue, answers: Queue, report: Report, outcome: dict[str, Any]
) -> Exception | None:
    """Answers rank 0's reports until the job ends, and keeps its result in `outcome`; returns the first exception
    `report` raised, which rank 0 is told of."""
    failed: Exception | None = None
    while job.is_alive() or not requests.empty():
        try:
            request_id, message = requests.get(timeout=POLL_S)
        except Empty:
            continue
        if request_id == RESULT:
            outcome[RESULT] = message
            continue
        try:
            answer: bool | str = bool(report(Metrics.model_validate_json(message)))
        except Exception as error:  # noqa: BLE001 - the job must end: rank 0 raises it, then it is raised here
            failed = failed or error
            answer = f"the sweep's report failed: {type(error).__name__}: {error}"
        answers.put((request_id, answer))
    return failed


def train_worker(loop_config: dict[str, Any]) -> None:
    """Ray Train's train_loop_per_worker: the sharded trial on this worker, rank 0 reporting to the Tune trial."""
    from train_entry.sharded.trial import run_sharded_trial  # imported on the worker, where torch runs

    config = TrialConfig.model_validate_json(loop_config["trial"])
    requests = loop_config["requests"]
    context = ray.train.get_context()
    rank = context.get_world_rank()
    with _output_to(Path(config.output_dir) / WORKER_LOG.format(rank=rank)):
        _stamped(f"worker {rank} of {context.get_world_size()} started on {socket.gethostname()}")
        try:
            check_shared(Path(config.output_dir) / loop_config["shared"])
            result = run_sharded_trial(config, relay(requests, loop_config["answers"]))
        except Exception:
            traceback.print_exc()
            raise
        _stamped(f"worker {rank} ended: {result.status.value} at step {result.steps}")
    if rank == 0:
        requests.put((RESULT, result.model_dump_json()))


def check_shared(marker: Path) -> None:
    """NotShared unless this node sees the file the Tune trial wrote into the trial's folder."""
    if not marker.is_file():
        raise NotShared(
            f"{marker.parent} on {socket.gethostname()} is not the trial's folder the Tune trial wrote into: the run "
            "directory must be on a file system every node of the cluster shares, since a trial's workers write "
            "one checkpoint into it (docs/multi-gpu.md)"
        )


class NotShared(RuntimeError):
    """A worker's node does not share the trial's folder with the Tune trial's node."""


def _stamped(line: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}", flush=True)


@contextlib.contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """This process's stdout and stderr, file descriptors 1 and 2 (the C libraries print there too), appended to
    `path` until the block ends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    kept = [os.dup(fd) for fd in (1, 2)]
    with path.open("ab") as log:
        for fd in (1, 2):
            os.dup2(log.fileno(), fd)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, original in zip((1, 2), kept, strict=True):
                os.dup2(original, fd)
                os.close(original)


def relay(requests: Queue, answers: Queue) -> Report:
    """Rank 0's report callback: the evaluation to the Tune trial, and its answer back."""

    def report(metrics: Metrics) -> bool:
        request_id = uuid.uuid4().hex
        requests.put((request_id, metrics.model_dump_json()))
        while True:
            answer_id, answer = answers.get()
            if answer_id != request_id:
                continue  # meant for a rank 0 that died before it read its answer
            if isinstance(answer, str):
                raise RuntimeError(answer)
            return answer

    return report
