"""`sweep jobs list [RUN]` and `sweep jobs logs ID`: submitted full-run jobs with their live status; a job's log.

Only loopback clusters are contacted unless --allow-remote is given, whether their address is
typed or recorded in a jobs.json: Ray's client sends the cluster token with every request.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Group

    from sweep.promote.launch.jobs import JobRow

ACTIONS = ("list", "logs")


def add_parser(verbs) -> None:
    jobs = verbs.add_parser("jobs", help="list submitted full-run jobs with their status, or follow one's log")
    actions = jobs.add_subparsers(dest="action", required=True, metavar="list | logs")
    listing = actions.add_parser("list", help="the jobs `sweep promote submit` recorded, with their live status")
    listing.add_argument("run", type=Path, nargs="?", help="one run directory (default: every run under runs/)")
    logs = actions.add_parser("logs", help="follow a job's log until it ends (secrets masked)")
    logs.add_argument("job", help="the job's submission id, e.g. cpt-llama3.1-70b-h100-480-1a2b3c4d")
    logs.add_argument("--address", help="the job's cluster (default: the address its jobs.json recorded)")
    for parser in (listing, logs):
        parser.add_argument(
            "--allow-remote",
            action="store_true",
            help="contact a non-loopback cluster: the --address given, or one a jobs.json recorded",
        )
    listing.set_defaults(func=list_jobs)
    logs.set_defaults(func=follow_job)


def list_jobs(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from reports.console import make_console
    from sweep.promote.launch.jobs import job_rows, run_dirs_for

    rows = job_rows(run_dirs_for(args.run), allow_remote=args.allow_remote)
    console = make_console()
    if not rows:
        console.print("no submitted jobs" + (f" for {escape(str(args.run))}" if args.run else " under runs/"))
        return 0
    console.print(jobs_listing(rows))
    return 0


def jobs_listing(rows: list[JobRow]) -> Group:
    """Each submitted job: its id (what `sweep jobs logs` takes) and status on one line, then, indented, its run and
    when and where it was submitted, wrapped whole. A table of five columns cut ids and addresses to "cpt-llama3.…"
    at 80 columns."""
    from rich.console import Group
    from rich.padding import Padding
    from rich.text import Text

    lines: list[Text | Padding] = [Text("full-run jobs", style="bold")]
    for row in rows:
        record = row.record
        submitted = record.submitted_at.strftime("%Y-%m-%d %H:%M %Z")
        lines.append(Text.assemble(record.submission_id, "  ", (row.status, "bold")))
        details = f"run {row.run}, submitted {submitted} to {record.address}"
        lines.append(Padding(Text(details, style="dim", overflow="fold"), (0, 0, 0, 4)))
    return Group(*lines)


def follow_job(args: argparse.Namespace) -> int:
    from sweep.address import parse_address
    from sweep.promote.launch.jobs import find_address, follow_logs, run_dirs_for

    if args.address:
        url = parse_address(args.address, allow_remote=args.allow_remote).url
    else:
        url = find_address(args.job, run_dirs_for(None), allow_remote=args.allow_remote)
    status = follow_logs(url, args.job, on_line=print)
    print(f"job {args.job}: {status}")
    return 0 if status == "SUCCEEDED" else 1
