"""`sweep report RUN [RUN ...]`: the HTML report of a run, or one page comparing several; `--wandb` adds a W&B view."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "report",
        help="write the HTML report of a run (or one comparing several runs); works while a sweep runs",
        description=(
            "One RUN: RUN/report/index.html (self-contained), a PNG per plot and report.md. Several RUNs: one "
            "comparison page overlaying their fronts and optima, by default in runs/compare-<a>-vs-<b>/report/."
        ),
    )
    parser.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="run directory, e.g. runs/lr_mix")
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="write the report into this new (or empty) folder instead (checked before anything is read: never a "
        "link, a file, a device, a RUN itself or a folder inside one)",
    )
    parser.add_argument("--force", action="store_true", help="let --output write into a folder that holds files")
    parser.add_argument(
        "--wandb",
        action="store_true",
        help="also save a W&B workspace view of the runs (online), or write its definition into the first RUN "
        "with the commands that publish it (offline)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from reports.report import write_comparison_report, write_run_report
    from sweep.files.outputs import check_output
    from sweep.files.rundir import RunDir

    if args.output is not None:  # before anything is read: a refused output costs nothing
        runs = {run: f"the run directory {str(run)!r}" for run in args.runs}
        check_output(args.output, inputs=runs, force=args.force, folder=True)
    if args.wandb:  # checked first: a sweep that logged nothing to W&B is refused before any writing
        from reports.wandb_dashboard import plan_view, publish

        view = plan_view(args.runs)
    if len(args.runs) == 1 and RunDir(args.runs[0]).is_ladder:
        from reports.ladder_report import write_ladder_report

        index = write_ladder_report(args.runs[0], args.output)
    elif len(args.runs) == 1:
        index = write_run_report(args.runs[0], args.output)
    else:
        index = write_comparison_report(args.runs, args.output)
    print(f"report: {index}")
    if args.wandb:
        print("\n".join(publish(view)))
    return 0
