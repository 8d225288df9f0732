"""`sweep run`: create or resume runs/<name>/, run the remaining trials under Ray Tune, pick the optimum.

The run directory holds the spec it ran, the Optuna study (a SQLite file unless the spec names
another storage), Ray Tune's experiment state and logs, and the outputs. Resuming never reads
Ray's state: the study says which trials finished, which were interrupted (re-run under the
same number) and how many are still to ask for. A lock on the run directory keeps two drivers
from adopting each other's running trials.

Trials open the study themselves, so with `--address` on a multi-node cluster the storage must
be reachable from every node: a server URL in spec.search.storage (e.g. PostgreSQL), or a run
directory on a shared file system.
"""

from __future__ import annotations

import fcntl
import logging
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import optuna
import ray
from ray import tune
from rich.console import Console

from reports.console import make_console
from reports.report import write_run_report
from sweep.address import check_ray_address
from sweep.best import best_summary, write_best
from sweep.live import LiveView, TableWriter
from sweep.prepare import Prepared, prepare
from sweep.rundir import RunDir, RunRecord
from sweep.searcher import StudySearcher
from sweep.select import select
from sweep.spec import SweepSpec, load_spec
from sweep.storage import shown_url, sqlite_file
from sweep.study import StudyMismatch, SweepStudy, open_study
from sweep.table import trial_rows, write_tables
from sweep.tracking import WandbTarget, log_sweep, resolve_wandb, worker_env
from sweep.trainable import proxy_trainable
from sweep.view import print_outcome

OBJECT_STORE_BYTES = 200 * 1024**2
"""Trials exchange only small metrics through Ray; the default store would take a third of RAM."""


class RunLocked(RuntimeError):
    """Another `sweep run` holds this run directory."""


def run_sweep(spec_path: Path, *, name: str | None, address: str | None, allow_remote: bool, fresh: bool) -> int:
    """Runs (or resumes) the sweep; exit code 0 when every planned trial has finished.

    Everything that can be refused (the spec, the run name, the cluster address, the storage URL and
    its environment) is checked before the run directory is created or touched.
    """
    spec = load_spec(spec_path)
    run = RunDir.named(name) if name is not None else RunDir.named(spec_path.stem, origin="the spec file's name")
    if address is not None:
        address = check_ray_address(address, allow_remote=allow_remote)
    console = make_console()
    wandb, notice = resolve_wandb(spec.tracking.wandb)  # the one place the W&B mode is decided
    if notice:
        console.print(notice, style="yellow")
    record = RunRecord(study_name=run.path.name, storage=spec.search.storage)
    url = record.url(run)  # an unset ${NAME} in the storage URL stops here, before anything is written
    try:
        with _locked(run):
            return _run(spec, record, url=url, run=run, address=address, fresh=fresh, wandb=wandb, console=console)
    except (RunLocked, StudyMismatch) as exc:
        console.print(f"error: {exc}", style="red")
        return 2


def _run(
    spec: SweepSpec,
    record: RunRecord,
    *,
    url: str,
    run: RunDir,
    address: str | None,
    fresh: bool,
    wandb: WandbTarget | None,
    console: Console,
) -> int:
    name = record.study_name
    if fresh:
        _discard(run, url=url, name=name, console=console)
    log = _log_handler(run.inside(run.driver_log))
    _route_logs(log)
    sweep = open_study(spec, url=url, name=name)  # refuses a study made for another spec
    run.write_spec_copy(spec)
    run.write_record(record)
    searcher = StudySearcher(sweep)
    write_tables(trial_rows(sweep), run)  # the table agrees with the study from the start
    console.print(
        f"sweep {name}: {sweep.plan.planned_trials} trials planned, {searcher.to_run} to run "
        f"(study in {shown_url(url)}, run directory {run.path})"
    )
    if searcher.to_run > 0:
        prepared = prepare(spec)
        _tune(spec, searcher, sweep, prepared=prepared, wandb=wandb, run=run, url=url, address=address, log=log)
    return _finish(sweep, run, console, name=name, wandb=wandb)


def _tune(
    spec: SweepSpec,
    searcher: StudySearcher,
    sweep: SweepStudy,
    *,
    prepared: Prepared,
    wandb: WandbTarget | None,
    run: RunDir,
    url: str,
    address: str | None,
    log: logging.Handler,
) -> None:
    resources = spec.resources
    concurrency = spec.search.concurrency
    # Trials on other nodes log online only with the driver's W&B key: it travels in the job's
    # runtime environment (held by Ray, never written into the run directory).
    runtime_env = {"env_vars": env} if (env := worker_env(wandb)) else None
    if address is None:
        ray.init(
            # "local" starts a Ray of our own; None would join whatever RAY_ADDRESS or Ray's last
            # address file names, unchecked.
            address="local",
            num_cpus=max(concurrency * resources.cpus, 1),
            num_gpus=math.ceil(resources.gpus * concurrency) if resources.gpus else None,
            object_store_memory=OBJECT_STORE_BYTES,
            include_dashboard=False,
            log_to_driver=False,  # trial output goes to its file under tune/, not to this terminal
            configure_logging=False,
            runtime_env=runtime_env,
        )
    else:
        ray.init(address=address, log_to_driver=False, configure_logging=False, runtime_env=runtime_env)
    _route_logs(log)  # ray.init sets up its own console handler again
    # Ray Tune's own console reporter would fight the live view; its legacy reporter at verbose 0 is quiet.
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"
    trainable = tune.with_resources(
        tune.with_parameters(
            proxy_trainable,
            prepared=prepared,
            wandb=wandb,
            url=url,
            study_name=sweep.study.study_name,
            run=RunDir(run.path.resolve()),
        ),
        {"cpu": resources.cpus, "gpu": resources.gpus},
    )
    tuner = tune.Tuner(
        trainable,
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            num_samples=searcher.to_run,
            max_concurrent_trials=concurrency,
            reuse_actors=True,  # a trial process keeps torch, the tokenizer and the study connection warm
        ),
        run_config=tune.RunConfig(
            name=run.tune.name,
            storage_path=str(run.path.resolve()),
            verbose=0,
            log_to_file=True,
            failure_config=tune.FailureConfig(max_failures=spec.search.max_retries),
            callbacks=[TableWriter(sweep, run), LiveView(sweep, concurrency=concurrency)],
        ),
    )
    try:
        tuner.fit()
    finally:
        ray.shutdown()


def _finish(sweep: SweepStudy, run: RunDir, console: Console, *, name: str, wandb: WandbTarget | None) -> int:
    rows = trial_rows(sweep)
    write_tables(rows, run)
    plan = sweep.plan
    selection = select(rows, forgetting_budget=plan.forgetting_budget, space=plan.space)
    summary = best_summary(selection, rows, plan)
    write_best(summary, run)
    log_sweep(wandb, name=name, sweep_id=sweep.sweep_id, run_dir=run.path, rows=rows, summary=summary, plan=plan)
    print_outcome(console, selection, rows, title=f"sweep {name}")
    cost = summary.cost
    console.print(
        f"tokens used {cost.tokens_used:,}; saved by pruning {cost.tokens_saved_by_pruning:,} (outputs in {run.path})"
    )
    console.print(f"report: {write_run_report(run.path)}")
    finished = sum(row.finished for row in rows)
    if finished < plan.planned_trials:
        console.print(
            f"{plan.planned_trials - finished} planned trial(s) did not finish; run the same command again", style="red"
        )
        return 1
    return 0


@contextmanager
def _locked(run: RunDir) -> Iterator[None]:
    run.path.mkdir(parents=True, exist_ok=True)
    # flock dies with its process, so a driver killed with -9 never leaves a stale lock behind.
    with open(run.inside(run.lock), "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLocked(f"another `sweep run` is using {run.path}; wait for it or use --name") from None
        yield


def _discard(run: RunDir, *, url: str, name: str, console: Console) -> None:
    """--fresh: moves everything in the run directory but its lock to runs/.trash/, and a study on a
    database server to a copy named after it; nothing is deleted that cannot be recovered."""
    trash = run.move_to_trash(keep=run.lock)
    if trash is not None:
        console.print(f"--fresh: the previous run is kept in {trash}")
    if sqlite_file(url) is not None:
        return  # the study was a file in the run directory: it moved with it
    kept = f"{name}-previous-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    try:
        optuna.copy_study(from_study_name=name, from_storage=url, to_storage=url, to_study_name=kept)
    except KeyError:
        return  # nothing stored yet
    optuna.delete_study(study_name=name, storage=url)
    console.print(f"--fresh: the previous study is kept as {kept!r} in {shown_url(url)}")


def _log_handler(path: Path) -> logging.Handler:
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    return handler


def _route_logs(handler: logging.Handler) -> None:
    """Ray's and Optuna's log records go to the run directory, not over the live view."""
    for logger_name in ("ray", "optuna"):
        logger = logging.getLogger(logger_name)
        logger.handlers[:] = [handler]
        logger.propagate = False
    optuna.logging.disable_default_handler()
