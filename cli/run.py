"""`sweep run SPEC`: run (or resume) a sweep under Ray Tune, show it live, find the best observed trial and the
pick, write the report."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.live import Live


def add_parser(verbs) -> None:
    parser = verbs.add_parser("run", help="run (or resume) a sweep under Ray Tune and pick the point to promote")
    parser.add_argument("spec", type=Path, help="sweep spec YAML")
    parser.add_argument(
        "--name",
        default=None,
        help="run directory name under runs/: letters, digits, '.', '_', '-' (default: the spec file's stem)",
    )
    parser.add_argument(
        "--address",
        default=None,
        help="join an existing Ray cluster: auto, HOST:PORT or ray://HOST:PORT; this machine only unless "
        "--allow-remote (default: start Ray locally)",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="accept a cluster on another machine: the W&B key and Ray's token travel to it",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="start over: the old runs/<name>/ is moved to runs/.trash/<name>-<time>/"
    )
    parser.set_defaults(func=run, interrupted="interrupted; run the same command again to resume")


def run(args: argparse.Namespace) -> int:
    """Exit code 0 when every planned trial has finished, 1 when some did not (run it again)."""
    from reports.console import make_console
    from reports.report import write_run_report
    from reports.tables import print_outcome
    from sweep.address import check_ray_address
    from sweep.files.rundir import RunDir
    from sweep.run.driver import RayConnection, run_sweep
    from sweep.run.tracking import resolve_wandb
    from sweep.spec.spec import forgetting_budget_warning, load_spec

    spec = load_spec(args.spec)
    console = make_console()
    budget = forgetting_budget_warning(spec.objective.forgetting_budget, key="objective.forgetting_budget")
    if budget is not None:  # said before anything runs: a budget of 1 lets the sweep pick a run that forgets a lot
        console.print(f"warning: {args.spec}: {budget}", style="yellow")
    _check_storage_driver(args.spec, spec.execution.storage)
    _check_harness(args.spec, spec)
    name, origin = (args.name, "--name") if args.name is not None else (args.spec.stem, "the spec file's name")
    run_dir = RunDir.named(name, origin=origin)
    address = check_ray_address(args.address, allow_remote=args.allow_remote) if args.address is not None else None
    wandb, notice = resolve_wandb(spec.tracking.wandb)  # the one place the W&B mode is decided
    if notice:
        console.print(notice, style="yellow")
    view = LiveView(budget=spec.objective.forgetting_budget)
    with RayConnection(address=address, wandb=wandb) as ray_connection:
        if spec.ladder is not None:
            return _run_ladder(args, spec, run_dir, ray_connection=ray_connection, view=view, console=console)
        outcome = run_sweep(spec, run_dir, ray_connection=ray_connection, fresh=args.fresh, view=view)

    title = f"sweep {run_dir.path.name}"
    print_outcome(console, outcome.selection, outcome.rows, title=title, summary=outcome.summary, notes=outcome.notes)
    cost = outcome.summary.cost
    console.print(
        f"tokens used {cost.tokens_used:,}; saved by pruning {cost.tokens_saved_by_pruning:,} (outputs in {run_dir.path})"
    )
    console.print(f"report: {write_run_report(run_dir.path)}")
    if outcome.finished < outcome.planned:
        console.print(
            f"{outcome.planned - outcome.finished} planned trial(s) did not finish; run the same command again",
            style="red",
        )
        return 1
    return 0


def _check_storage_driver(path: Path, storage: str | None) -> None:
    """A database driver this machine lacks stops the sweep before anything is written (the spec itself is valid
    wherever the driver is)."""
    from sweep.files.config_file import SpecError
    from sweep.files.storage_url import StorageError, check_driver, shown_url

    if storage is None:
        return  # SQLite in the run directory
    try:
        check_driver(storage)
    except StorageError as exc:
        raise SpecError(f"{path}: execution.storage = {shown_url(storage)!r}: {exc}") from None


def _check_harness(path: Path, spec) -> None:
    """A spec that scores trials on downstream tasks stops before the run directory is made where lm-evaluation-harness
    is not installed (the spec itself is valid wherever it is; `sweep base` and `sweep trial` stop in prepare)."""
    from sweep.files.config_file import SpecError
    from train_entry.downstream.harness import HarnessMissing, require_harness

    if spec.evaluation.downstream is None:
        return
    try:
        require_harness()
    except HarnessMissing as exc:
        raise SpecError(f"{path}: {exc}") from None


def _run_ladder(args, spec, run_dir, *, ray_connection, view, console) -> int:
    """Every rung's sweep, smallest first, then the law across them; a report per rung and one of the ladder."""
    from reports.ladder_report import print_ladder, write_ladder_report
    from reports.report import write_run_report
    from sweep.files.config_file import SpecError
    from sweep.ladder.driver import run_ladder
    from sweep.ladder.rungs import ladder_target
    from sweep.run.driver import run_sweep
    from sweep.target.errors import TargetError

    try:  # before any compute: the rungs are matched to the target's pretraining tokens
        target = ladder_target(spec)
    except TargetError as exc:
        raise SpecError(f"{args.spec}: ladder.target: {exc}") from None

    def run_rung(rung, run, start):
        return run_sweep(
            rung.spec, run, ray_connection=ray_connection, fresh=start.fresh, view=view, study_name=start.study_name
        )

    max_gpus = ray_connection.gpus(spec.execution) if spec.execution.gpus else None
    outcome = run_ladder(spec, run_dir, target, fresh=args.fresh, view=view, run_rung=run_rung, max_gpus=max_gpus)
    for name in outcome.outcomes:
        write_run_report(run_dir.rung(name).path)
    print_ladder(console, outcome.summary)
    console.print(f"report: {write_ladder_report(run_dir.path)}")
    if outcome.unfinished or not outcome.summary.is_finished:
        console.print("some rungs did not finish; run the same command again", style="red")
        return 1
    return 0


class LiveView:
    """On a terminal, a live trials table under a summary line; otherwise one summary line per finished
    trial, so that the log of a long sweep stays readable.

    Ray Tune pickles its callbacks (and this view with them) when the Tuner is built, and a console
    holds locks: the view keeps one only from `start` on.
    """

    def __init__(self, *, budget: float) -> None:
        self._budget = budget
        self._finished = 0
        self._console: Console | None = None
        self._live: Live | None = None

    def message(self, text: str) -> None:
        from reports.console import make_console

        (self._console or make_console()).print(text, soft_wrap=True)

    def start(self) -> None:
        console = self._terminal_or_log()
        if console.is_terminal:
            self._live = Live(console=console, auto_refresh=False, transient=True)
            self._live.start()

    def update(self, rows, *, planned: int, trial_ended: bool, at_once: int) -> None:
        from reports.tables import trials_table

        if self._live is not None:
            self._live.update(trials_table(rows, title=self._line(rows, planned, at_once)), refresh=True)
            return
        finished = sum(row.finished for row in rows)
        if finished != self._finished and (not trial_ended or self._settled(rows, planned, finished, at_once)):
            self._finished = finished
            self._terminal_or_log().print(self._line(rows, planned, at_once), soft_wrap=True)

    def _settled(self, rows, planned: int, finished: int, at_once: int) -> bool:
        """Whether the trials that replace an ended one have started. Ray Tune calls back on a trial's end
        before it asks the searcher for the next, so a line written then counts one trial too few running;
        such a line waits for the next start (or the next refresh), unless nothing is left to start."""
        from sweep.study.record import Status

        running = sum(row.status is Status.RUNNING for row in rows)
        return running >= min(at_once, planned - finished)

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        self._console = None  # a ladder's next rung pickles this view again with its own Tuner

    def _terminal_or_log(self) -> Console:
        if self._console is None:
            from reports.console import make_console

            self._console = make_console()
        return self._console

    def _line(self, rows, planned: int, at_once: int) -> str:
        from reports.tables import progress_line
        from sweep.choice.observed import best_observed

        # The ETA counts the trials the cluster runs at once (sweep.run.trial_slots), not execution.concurrency: a
        # trial of 4 GPUs on 8 runs two at a time whatever the concurrency.
        return progress_line(rows, planned=planned, best=best_observed(rows, self._budget), concurrency=at_once)
