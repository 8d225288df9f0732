"""What the driver does while Ray Tune runs: keep the trials table current and show progress.

Both callbacks read the study after each trial ends (Ray calls back after the trial has told
its outcome and after the searcher has recorded a failure), so neither keeps a state of its own.
"""

from __future__ import annotations

import time

from ray.tune import Callback
from rich.console import Console
from rich.live import Live

from reports.console import make_console
from sweep.rundir import RunDir
from sweep.select import select
from sweep.study import SweepStudy
from sweep.table import TrialRow, trial_rows, write_tables
from sweep.view import progress_line, trials_table

REFRESH_S = 1.0
"""Live-view refresh period: a study read per second is cheap next to a trial."""


class TableWriter(Callback):
    """Rewrites trials.parquet / trials.csv whenever a trial starts or ends."""

    def __init__(self, sweep: SweepStudy, run: RunDir) -> None:
        self._sweep = sweep
        self._run = run

    def _write(self) -> None:
        write_tables(trial_rows(self._sweep), self._run)

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        self._write()

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        self._write()

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self._write()


class LiveView(Callback):
    """On a terminal, a live table under a summary line; otherwise one summary line per finished
    trial, so that the log of a long sweep stays readable."""

    def __init__(self, sweep: SweepStudy, *, concurrency: int) -> None:
        self._sweep = sweep
        self._concurrency = concurrency
        self._last_refresh = 0.0
        self._finished = -1
        # Made in setup: Ray Tune pickles its callbacks when the Tuner is built, and a console
        # holds locks.
        self._console: Console | None = None
        self._live: Live | None = None

    def setup(self, **info) -> None:
        self._console = make_console()
        if self._console.is_terminal:
            self._live = Live(console=self._console, auto_refresh=False, transient=True)
            self._live.start()

    def on_step_end(self, iteration, trials, **info) -> None:
        if self._live is None or time.monotonic() - self._last_refresh < REFRESH_S:
            return
        self._last_refresh = time.monotonic()
        rows = trial_rows(self._sweep)
        self._live.update(trials_table(rows, title=self._line(rows)), refresh=True)

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        self._trial_ended()

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self._trial_ended()

    def on_experiment_end(self, trials, **info) -> None:
        if self._live is not None:
            self._live.stop()

    def _trial_ended(self) -> None:
        if self._live is not None:
            return
        rows = trial_rows(self._sweep)
        finished = sum(row.finished for row in rows)
        if finished != self._finished:
            self._finished = finished
            self._console.print(self._line(rows), soft_wrap=True)

    def _line(self, rows: list[TrialRow]) -> str:
        plan = self._sweep.plan
        best = select(rows, forgetting_budget=plan.forgetting_budget, space=plan.space).optimum
        return progress_line(rows, plan, best=best, concurrency=self._concurrency)
