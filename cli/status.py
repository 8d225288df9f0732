"""`sweep status RUN`: the trials table, best observed trial and pick of a running or finished sweep, from its study;
of a ladder (runs/<ladder>/), each rung's progress and pick in order and the law once every rung has finished.

Reads only the studies and ladder.json, so it shows the same thing from any terminal while `sweep run` goes on,
and creates nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "status",
        help="print the trials table of a running or finished sweep, or each rung of a ladder",
        description=(
            "A sweep's run directory: its trials, best observed trial, pick and progress. A ladder's "
            "(runs/<ladder>/): each rung's progress and, once it finished, its pick, and the loss law over every "
            "rung once all have finished; `sweep status runs/<ladder>/rungs/<rung>` shows a rung's trials."
        ),
    )
    parser.add_argument("run", type=Path, help="run directory, e.g. runs/lr_mix or runs/lr_mix_ladder")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from reports.console import make_console
    from reports.tables import print_outcome
    from sweep.choice.points import replicates_note
    from sweep.files.rundir import RunDir

    console = make_console()
    run_dir = RunDir(args.run)
    if run_dir.is_ladder:
        _print_ladder(console, run_dir)
        return 0
    status = _RunStatus(run_dir)
    title = f"sweep {status.record.study_name} ({args.run})"
    notes = [note for note in [replicates_note(status.rows, top=status.plan.search.replicates.top)] if note]
    print_outcome(console, status.selection, status.rows, title=title, summary=status.summary, notes=notes)
    console.print(status.progress())
    return 0


class _RunStatus:
    """What status says of one run directory, read from its study."""

    def __init__(self, run_dir) -> None:
        from sweep.choice.best import best_summary, trials_expected
        from sweep.choice.observed import select
        from sweep.study.run_study import open_run
        from sweep.study.table import trial_rows

        self.record, sweep = open_run(run_dir)
        self.rows = trial_rows(sweep)
        self.plan = sweep.plan
        self.selection = select(
            self.rows, forgetting_budget=self.plan.forgetting_budget, space=self.plan.space,
            downstream_budget=self.plan.downstream_budget,
        )  # fmt: skip
        self.summary = best_summary(self.selection, self.rows, self.plan)
        self.expected = trials_expected(self.summary, self.rows, self.plan)

    def progress(self) -> str:
        from reports.tables import progress_line
        from sweep.study.record import Status

        # Another terminal's sweep runs as many trials at once as it has running now.
        running = sum(row.status is Status.RUNNING for row in self.rows)
        return progress_line(
            self.rows, planned=self.expected, best=self.selection.best_observed, concurrency=max(1, running)
        )


def _print_ladder(console, run_dir) -> None:
    """Each planned rung in order (N, progress, and its pick once it finished), then the law once fitted."""
    from reports.decision import pick_lines
    from reports.ladder_report import print_ladder
    from sweep.ladder.record import read_ladder

    summary = read_ladder(run_dir)
    finished = {rung.name for rung in summary.finished}
    console.print(f"ladder {run_dir.path.name} ({run_dir.path}): {len(finished)} of {len(summary.planned)} rungs "
                  f"finished", style="bold", highlight=False)  # fmt: skip
    for index, design in enumerate(summary.rungs):
        rung = run_dir.rung(design.name)
        run_dir.inside(rung.path)  # a rung folder that is a symlink out of the ladder is refused, not read
        head = f"rung {design.name} ({index + 1} of {len(summary.rungs)}), N {design.parameters:,}: "
        if not rung.run_json.exists():
            console.print(head + "not started", highlight=False)
            continue
        status = _RunStatus(rung)
        console.print(head + status.progress(), highlight=False)
        if design.name in finished:
            for line in pick_lines(status.summary.pick):
                console.print(f"  {line}", highlight=False)
    print_ladder(console, summary)
    console.print(f"a rung's trials: sweep status {run_dir.rungs}/<rung>", highlight=False)
