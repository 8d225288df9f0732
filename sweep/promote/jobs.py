"""`sweep jobs [RUN]` and `sweep jobs logs ID`: the submitted full runs, their live status, and their logs.

The list comes from every runs/<name>/promotion/<id>/jobs.json; the status from each job's
cluster, asked once per address ("unreachable" when it does not answer). Log lines are
followed through the Jobs API and masked for secrets before they are printed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from sweep.address import AddressError, jobs_client, parse_address
from sweep.promote.errors import PromotionError
from sweep.promote.plan import PROMOTION_DIR
from sweep.promote.secrets import redact, secret_env
from sweep.promote.submit import JobRecord, read_records
from sweep.rundir import RUNS

UNREACHABLE = "unreachable"


@dataclass(frozen=True)
class JobRow:
    run: str
    record: JobRecord
    status: str


def records_of(run_dirs: Iterable[Path]) -> list[tuple[str, JobRecord]]:
    """(run name, record) for every job submitted from these run directories, oldest first."""
    found = [
        (run_dir.name, record)
        for run_dir in run_dirs
        for plan_dir in sorted((run_dir / PROMOTION_DIR).glob("*"))
        for record in read_records(plan_dir)
    ]
    return sorted(found, key=lambda item: item[1].submitted_at)


def job_rows(run_dirs: Iterable[Path]) -> list[JobRow]:
    records = records_of(run_dirs)
    statuses: dict[str, dict[str, str] | None] = {}
    for address in {record.address for _, record in records}:
        try:
            jobs = jobs_client(address).list_jobs()
        except (AddressError, RuntimeError, ValueError):  # the cluster is gone, or its Jobs API refuses us
            statuses[address] = None
            continue
        statuses[address] = {job.submission_id: job.status.value for job in jobs if job.submission_id}
    return [
        JobRow(
            run,
            record,
            UNREACHABLE
            if statuses[record.address] is None
            else statuses[record.address].get(record.submission_id, "unknown"),
        )
        for run, record in records
    ]


def run_dirs_for(run: Path | None) -> list[Path]:
    if run is not None:
        if not run.is_dir():
            raise PromotionError(f"{run} is not a run directory (expected e.g. runs/lr_mix)")
        return [run]
    return sorted(path for path in RUNS.glob("*") if path.is_dir())


def find_address(job_id: str, run_dirs: Iterable[Path]) -> str:
    """The cluster address jobs.json recorded for job_id; PromotionError naming the fix when none did."""
    for _, record in records_of(run_dirs):
        if record.submission_id == job_id:
            return record.address
    raise PromotionError(
        f"no jobs.json under runs/*/{PROMOTION_DIR}/ records a job {job_id!r}; give its cluster with --address"
    )


def follow_logs(address: str, job_id: str, *, on_line: Callable[[str], None], timeout_s: float | None = None) -> str:
    """Streams job_id's log, line by line with secrets masked, until the job ends; returns its final status."""
    client = jobs_client(address)
    secrets = secret_env()

    async def follow() -> None:
        pending = ""
        async for chunk in client.tail_job_logs(job_id):
            lines = (pending + chunk).split("\n")
            pending = lines.pop()
            for line in lines:
                on_line(redact(line, secrets))
        if pending:
            on_line(redact(pending, secrets))

    asyncio.run(asyncio.wait_for(follow(), timeout_s))
    return client.get_job_status(job_id).value


def print_jobs(run: Path | None) -> int:
    from rich.table import Table

    from reports.console import make_console

    rows = job_rows(run_dirs_for(run))
    console = make_console()
    if not rows:
        console.print("no submitted jobs" + (f" for {run}" if run else " under runs/"))
        return 0
    table = Table(title="full-run jobs")
    for column in ("run", "job", "status", "cluster", "submitted"):
        table.add_column(column)
    for row in rows:
        record = row.record
        table.add_row(row.run, record.submission_id, row.status, record.address, record.submitted_at)
    console.print(table)
    return 0


def print_logs(job_id: str, *, address: str | None, allow_remote: bool) -> int:
    url = parse_address(address, allow_remote=allow_remote).url if address else find_address(job_id, run_dirs_for(None))
    status = follow_logs(url, job_id, on_line=print)
    print(f"job {job_id}: {status}")
    return 0 if status == "SUCCEEDED" else 1
