"""`sweep status RUN`: the trials table and optimum of a running or finished sweep, from its study.

Reads only the study, so it shows the same thing from any terminal while `sweep run` goes on, and
creates nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(verbs) -> None:
    parser = verbs.add_parser("status", help="print the trials table of a running or finished sweep")
    parser.add_argument("run", type=Path, help="run directory, e.g. runs/lr_mix")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from reports.tables import print_outcome, progress_line
    from sweep.best import best_summary
    from sweep.console import make_console
    from sweep.record import Status
    from sweep.rundir import RunDir, open_run
    from sweep.select import select
    from sweep.table import trial_rows

    console = make_console()
    record, sweep = open_run(RunDir(args.run))
    rows = trial_rows(sweep)
    plan = sweep.plan
    selection = select(rows, forgetting_budget=plan.forgetting_budget, space=plan.space)
    pick = best_summary(selection, rows, plan).pick
    print_outcome(console, selection, rows, title=f"sweep {record.study_name} ({args.run})", pick=pick)
    # Another terminal's sweep runs as many trials at once as it has running now.
    running = sum(row.status is Status.RUNNING for row in rows)
    console.print(progress_line(rows, planned=plan.planned_trials, best=selection.optimum, concurrency=max(1, running)))
    return 0
