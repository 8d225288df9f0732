"""`sweep run`'s engine: create or resume runs/<name>/, run the remaining trials under Ray Tune, pick the optimum.

The run directory holds the spec it ran, the Optuna study (a SQLite file unless the spec names
another storage), Ray Tune's experiment state and logs, and the outputs. Resuming never reads
Ray's state: the study says which trials finished, which were interrupted (re-run under the
same number) and how many are still to ask for. A lock on the run directory keeps two drivers
from adopting each other's running trials.

Trials open the study themselves, so with a cluster address the storage must be reachable from
every node: a server URL in execution.storage (e.g. PostgreSQL), or a run directory on a shared
file system. What a person sees while it runs is the caller's `SweepView`.
"""

from __future__ import annotations

import fcntl
import logging
import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol, Self

import optuna
import ray
from ray import tune

from sweep.choice.best import BestSummary, best_summary, trials_expected, write_best
from sweep.choice.observed import Selection, select
from sweep.choice.points import replicates_note
from sweep.files.rundir import RunDir, RunLocked, RunRecord
from sweep.files.storage_url import shown_url, sqlite_file
from sweep.run.checkpoint_room import sweep_checkpoint_room
from sweep.run.interrupt import sigterm_as_sigint
from sweep.run.prepare import Prepared, prepare
from sweep.run.searcher import StudySearcher
from sweep.run.sweep_log import log_sweep
from sweep.run.tracking import WandbTarget, worker_env
from sweep.run.trainable import proxy_trainable
from sweep.run.trial_slots import DRIVER_CPUS, ClusterTooSmall, TrialSlots, local_gpus, trial_cpus, trial_slots
from sweep.spec.spec import ExecutionConfig, SweepSpec
from sweep.study.row import TrialRow
from sweep.study.study import PICK_ATTR, SweepStudy, open_study
from sweep.study.table import trial_rows, write_tables

OBJECT_STORE_BYTES = 200 * 1024**2
"""Trials exchange only small metrics through Ray; the default store would take a third of RAM."""
REFRESH_S = 1.0
"""How often a running sweep's view is refreshed: a study read per second is cheap next to a trial."""


class SweepView(Protocol):
    """What a person sees of a running sweep; `sweep run` shows a live table on a terminal."""

    def message(self, text: str) -> None: ...

    def start(self) -> None: ...

    def update(self, rows: list[TrialRow], *, planned: int, trial_ended: bool, at_once: int) -> None:
        """The trials as the study holds them now, of `planned`, `at_once` of them at a time: when a trial
        starts, after one ended (`trial_ended`), and every few seconds between."""

    def stop(self) -> None: ...


@dataclass(frozen=True)
class SweepOutcome:
    rows: list[TrialRow]
    selection: Selection
    summary: BestSummary
    planned: int
    notes: tuple[str, ...] = ()
    """What the table alone does not tell (see print_outcome)."""

    @property
    def finished(self) -> int:
        return sum(row.finished for row in self.rows)


class RayConnection:
    """The Ray that a driver's sweeps run their trials on, used as `with RayConnection(...) as ray_connection:`.

    The cluster at `address` (checked by the caller), or a Ray of this process's own sized for the trials. The first
    sweep with trials to run starts or joins it; the sweeps after it (a ladder's rungs) keep it, unless one needs
    more CPUs or GPUs than a Ray of our own was started with; it is shut down when the block ends. A Ray start costs
    ~7 s of CPU.
    """

    def __init__(self, *, address: str | None, wandb: WandbTarget | None) -> None:
        self.address = address
        self.wandb = wandb

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def ensure(self, execution: ExecutionConfig) -> None:
        """Ray for the trials of `execution`: the one joined or started before if they fit it, else started now.
        Whether they fit a cluster is trial_slots' to say."""
        if ray.is_initialized() and (self.address is not None or self._holds(execution)):
            return
        self.close()
        _start_ray(execution, address=self.address, wandb=self.wandb)

    def gpus(self, execution: ExecutionConfig) -> int:
        """The GPUs trials can take: the cluster's at `address` (joined now, for a ladder to check every rung before
        its first), else this machine's, which a Ray of our own is given."""
        if self.address is None:
            return local_gpus()
        self.ensure(execution)
        return math.floor(ray.cluster_resources().get("GPU", 0))

    def close(self) -> None:
        if ray.is_initialized():
            ray.shutdown()

    def _holds(self, execution: ExecutionConfig) -> bool:
        """Whether the Ray of our own now running has the CPUs and GPUs a Ray for `execution` would have."""
        cpus, gpus = _local_size(execution)
        resources = ray.cluster_resources()
        return cpus <= resources.get("CPU", 0) and gpus <= resources.get("GPU", 0)


def run_sweep(
    spec: SweepSpec,
    run: RunDir,
    *,
    ray_connection: RayConnection,
    fresh: bool,
    view: SweepView,
    study_name: str | None = None,
) -> SweepOutcome:
    """Runs (or resumes) the sweep in `run` on `ray_connection`'s Ray; the caller has checked the run name.

    The study is named `study_name` (default the run directory's name). The storage URL and its environment are
    checked before the run directory is created or touched.
    """
    wandb = ray_connection.wandb
    record = RunRecord(study_name=study_name or run.path.name, storage=spec.execution.storage)
    url = record.url(run)  # an unset ${NAME} in the storage URL stops here, before anything is written
    with locked(run):
        if fresh:
            _discard(run, url=url, name=record.study_name, view=view)
        log = _log_handler(run.inside(run.driver_log))
        _route_logs(log)
        sweep = open_study(spec.plan(), url=url, name=record.study_name)  # refuses another spec's
        run.write_spec_copy(spec)
        run.write_record(record)
        searcher = StudySearcher(sweep)
        write_tables(trial_rows(sweep), run)  # the table agrees with the study from the start
        view.message(
            f"sweep {record.study_name}: {sweep.plan.planned_trials} trials planned, {searcher.to_run} to run "
            f"(study in {shown_url(url)}, run directory {run.path})"
        )
        if searcher.to_run > 0:
            ray_connection.ensure(spec.execution)
            _route_logs(log)  # ray.init sets up its own console handler again
            # Before anything is prepared: a trial larger than the cluster would wait forever.
            slots = trial_slots(spec.execution, concurrency=spec.execution.concurrency,
                                cluster=ray.cluster_resources())  # fmt: skip
            view.message(slots.line(spec.execution))
            if (room := sweep_checkpoint_room(spec, run.path, at_once=slots.at_once)) is not None:
                view.message(f"warning: {room}")
            prepared = prepare(spec)
            _tune(spec, searcher, sweep, prepared=prepared, slots=slots, wandb=wandb, run=run, url=url, view=view)
        return finish_sweep(sweep, run, wandb=wandb)


def _tune(
    spec: SweepSpec,
    searcher: StudySearcher,
    sweep: SweepStudy,
    *,
    prepared: Prepared,
    slots: TrialSlots,
    wandb: WandbTarget | None,
    run: RunDir,
    url: str,
    view: SweepView,
) -> None:
    execution = spec.execution
    quiet_tune()
    trainable = tune.with_resources(
        tune.with_parameters(
            proxy_trainable,
            prepared=prepared,
            wandb=wandb,
            url=url,
            study_name=sweep.study.study_name,
            run=RunDir(run.path.resolve()),
        ),
        slots.resources,
    )
    tuner = tune.Tuner(
        trainable,
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            num_samples=searcher.most_to_run,  # the searcher says when it has finished
            max_concurrent_trials=slots.at_once,
            reuse_actors=True,  # a trial process keeps torch, the tokenizer and the study connection warm
        ),
        run_config=tune.RunConfig(
            name=run.tune.name,
            storage_path=str(run.path.resolve()),
            verbose=0,
            log_to_file=True,
            # Each trial's stdout and stderr into tune/<trial>/ when it ends: Tune keeps them in Ray's session
            # folder otherwise.
            sync_config=tune.SyncConfig(sync_artifacts=True),
            failure_config=tune.FailureConfig(max_failures=execution.max_retries),
            callbacks=[StudyWatch(sweep, run, view, at_once=slots.at_once)],
        ),
    )
    tuner.fit()


def _start_ray(execution: ExecutionConfig, *, address: str | None, wandb: WandbTarget | None) -> None:
    """A Ray of our own sized for the trials, or the cluster at `address` (checked by the caller)."""
    # Trials on other nodes log online only with the driver's W&B key: it travels in the job's
    # runtime environment (held by Ray, never written into the run directory).
    runtime_env = {"env_vars": env} if (env := worker_env(wandb)) else None
    if address is not None:
        ray.init(address=address, log_to_driver=False, configure_logging=False, runtime_env=runtime_env)
    else:
        _start_local_ray(*_local_size(execution), runtime_env)
    sigterm_as_sigint()  # after ray.init, which replaces the handler: SIGTERM is Tune's graceful stop too


def _local_size(execution: ExecutionConfig) -> tuple[int, int]:
    """(CPUs, GPUs) of a Ray of our own for `execution`'s trials: every GPU here when trials use them, and the CPUs
    `concurrency` trials take, no more than this machine has (a sharded trial's driver, which only waits on its
    job, aside); trials at once are as many as they hold (sweep.run.trial_slots). ClusterTooSmall when one trial
    computes on more CPUs than the machine has: sized to the request, 64 workers on 2 cores were not refused and
    reached 6.3 GB before they were killed."""
    machine, per_trial = machine_cpus(), trial_cpus(execution)
    computing = per_trial - (DRIVER_CPUS if execution.sharded else 0)
    if computing > machine:
        raise ClusterTooSmall(
            f"a trial computes on {computing} CPU(s) (execution.cpus = {execution.cpus} per worker, "
            f"{execution.trial_workers} worker(s)) and this machine has {machine}; lower execution.cpus or "
            "execution.workers, or run on a Ray cluster that has them (--address)"
        )
    cpus = min(execution.concurrency * per_trial, max(machine, per_trial))
    return cpus, local_gpus() if execution.gpus else 0


def machine_cpus() -> int:
    """The CPUs this process may run on (its affinity, as a container or taskset limits it)."""
    return len(os.sched_getaffinity(0))


def _start_local_ray(cpus: int, gpus: int, runtime_env: dict | None) -> None:
    ray.init(
        # "local" starts a Ray of our own; None would join whatever RAY_ADDRESS or Ray's last
        # address file names, unchecked.
        address="local",
        num_cpus=cpus,
        num_gpus=gpus,
        object_store_memory=OBJECT_STORE_BYTES,
        include_dashboard=False,
        log_to_driver=False,  # trial output goes to its file under tune/, not to this terminal
        configure_logging=False,
        runtime_env=runtime_env,
    )


def quiet_tune() -> None:
    """Ray Tune's settings for a sweep's driver, before its Tuner starts."""
    # Tune's own console reporter would fight the caller's view; its legacy reporter at verbose 0 is quiet.
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"
    # Tune's automatic CSV, JSON and TensorBoard loggers copy into tune/ what the study and trials.parquet already
    # hold, and the TensorBoard one imports torch into the driver (~3 s of CPU a sweep). Set to 0, they come back.
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")


class StudyWatch(tune.Callback):
    """Keeps trials.parquet / trials.csv current whenever a trial starts or ends, and the view with them.

    It reads the study each time (Ray calls back after the trial has told its outcome and after the
    searcher has recorded a failure), so it keeps no state of its own.
    """

    def __init__(self, sweep: SweepStudy, run: RunDir, view: SweepView, *, at_once: int) -> None:
        self._sweep = sweep
        self._run = run
        self._view = view
        self._at_once = at_once
        self._last_refresh = 0.0

    def setup(self, **info) -> None:
        self._view.start()

    def on_step_end(self, iteration, trials, **info) -> None:
        if time.monotonic() - self._last_refresh >= REFRESH_S:
            self._last_refresh = time.monotonic()
            rows, planned = trial_rows(self._sweep), self._sweep.plan.planned_trials
            self._view.update(rows, planned=planned, trial_ended=False, at_once=self._at_once)

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        rows = trial_rows(self._sweep)
        write_tables(rows, self._run)
        self._view.update(rows, planned=self._sweep.plan.planned_trials, trial_ended=False, at_once=self._at_once)

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        self._trial_ended()

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self._trial_ended()

    def on_experiment_end(self, trials, **info) -> None:
        self._view.stop()

    def _trial_ended(self) -> None:
        rows = trial_rows(self._sweep)
        write_tables(rows, self._run)
        self._view.update(rows, planned=self._sweep.plan.planned_trials, trial_ended=True, at_once=self._at_once)


def finish_sweep(sweep: SweepStudy, run: RunDir, *, wandb: WandbTarget | None) -> SweepOutcome:
    """The table, best.json (and the sweep's W&B summary) of the study as it stands."""
    rows = trial_rows(sweep)
    write_tables(rows, run)
    plan = sweep.plan
    selection = select(
        rows, forgetting_budget=plan.forgetting_budget, space=plan.space, downstream_budget=plan.downstream_budget
    )
    summary = best_summary(selection, rows, plan)
    write_best(summary, run)
    sweep.study.set_user_attr(PICK_ATTR, pick_attr(summary))
    name = sweep.study.study_name
    log_sweep(wandb, name=name, sweep_id=sweep.sweep_id, run_dir=run.path, rows=rows, summary=summary, plan=plan)
    notes = tuple(note for note in [replicates_note(rows, top=plan.search.replicates.top)] if note)
    # As things stand, not as planned: a sweep with nothing to confirm has run every trial it will run.
    expected = trials_expected(summary, rows, plan)
    return SweepOutcome(rows=rows, selection=selection, summary=summary, planned=expected, notes=notes)


def pick_attr(summary: BestSummary) -> dict:
    """The study's record of the pick (PICK_ATTR): the verdict, the point, its trials and its confirmation."""
    point = summary.pick.point
    return {
        "verdict": summary.verdict,
        "lr_fraction": point.lr_fraction if point else None,
        "mix": point.mix if point else None,
        "trials": summary.pick_trials,
        "confirmation": summary.confirmation.outcome.value,
    }


@contextmanager
def locked(run: RunDir) -> Iterator[None]:
    """Holds the run directory's lock; RunLocked when another driver holds it."""
    run.path.mkdir(parents=True, exist_ok=True)
    # flock dies with its process, so a driver killed with -9 never leaves a stale lock behind.
    with open(run.inside(run.lock), "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLocked(f"another `sweep run` is using {run.path}; wait for it or use --name") from None
        yield


def _discard(run: RunDir, *, url: str, name: str, view: SweepView) -> None:
    """--fresh: moves everything in the run directory but its lock to runs/.trash/, and a study on a
    database server to a copy named after it; nothing is deleted that cannot be recovered."""
    trash = run.move_to_trash(keep=run.lock)
    if trash is not None:
        view.message(f"--fresh: the previous run is kept in {trash}")
    if sqlite_file(url) is not None:
        return  # the study was a file in the run directory: it moved with it
    kept = f"{name}-previous-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    try:
        optuna.copy_study(from_study_name=name, from_storage=url, to_storage=url, to_study_name=kept)
    except KeyError:
        return  # nothing stored yet
    optuna.delete_study(study_name=name, storage=url)
    view.message(f"--fresh: the previous study is kept as {kept!r} in {shown_url(url)}")


def _log_handler(path) -> logging.Handler:
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    return handler


def _route_logs(handler: logging.Handler) -> None:
    """Ray's and Optuna's log records go to the run directory, not over the caller's view."""
    for logger_name in ("ray", "optuna"):
        logger = logging.getLogger(logger_name)
        logger.handlers[:] = [handler]
        logger.propagate = False
    optuna.logging.disable_default_handler()
