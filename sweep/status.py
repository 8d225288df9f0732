"""`sweep status RUN`: the trials table and optimum of a running or finished sweep, from its study.

Reads only the study, so it shows the same thing from any terminal while `sweep run` goes on.
"""

from __future__ import annotations

from pathlib import Path

from reports.console import make_console
from sweep.rundir import RunDir, open_run
from sweep.select import select
from sweep.table import trial_rows
from sweep.view import print_outcome, progress_line


def print_status(run_dir: Path) -> int:
    console = make_console()
    record, sweep = open_run(RunDir(run_dir))
    rows = trial_rows(sweep)
    plan = sweep.plan
    selection = select(rows, forgetting_budget=plan.forgetting_budget, space=plan.space)
    print_outcome(console, selection, rows, title=f"sweep {record.study_name} ({run_dir})")
    console.print(progress_line(rows, plan, best=selection.optimum, concurrency=plan.search.concurrency))
    return 0
