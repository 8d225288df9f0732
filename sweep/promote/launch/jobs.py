"""The submitted full runs (`sweep jobs list | logs`): their live status, and their logs.

The list comes from every runs/<name>/promotion/<id>/jobs.json; the status from each job's
cluster, asked once per address ("unreachable" when it does not answer). Log lines are
followed through the Jobs API and masked for secrets before they are printed. Nothing here
writes a file.

An address read from jobs.json passes the check a typed --address does: Ray's client sends the
cluster token with each request, so a planted address would collect it. A listing shows the job
of a remote cluster as "not contacted" without --allow-remote and still exits 0: the other rows
are true, and one record (planted or not) should not hide the user's other jobs, just as an
unreachable cluster does not. `sweep jobs logs ID` asks for that one job, so there a remote
address without --allow-remote is exit 2, naming the file and the address.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from sweep.address import AddressError, ClusterAddress, jobs_client, parse_address
from sweep.files.rundir import PROMOTION_DIR, RUNS, RunDir
from sweep.promote.errors import PromotionError
from sweep.promote.launch.job_records import JobRecord, read_records
from sweep.promote.launch.secrets import redact, secret_env

UNREACHABLE = "unreachable"
NOT_CONTACTED = "not contacted: remote address, pass --allow-remote"


@dataclass(frozen=True)
class FoundRecord:
    run: str
    path: Path
    """The jobs.json it was read from, for messages."""
    record: JobRecord

    def address(self, *, allow_remote: bool) -> ClusterAddress:
        """The recorded cluster, checked as a typed --address; AddressError naming the file otherwise."""
        return parse_address(self.record.address, allow_remote=allow_remote, source=f"{self.path}: address")


@dataclass(frozen=True)
class JobRow:
    run: str
    record: JobRecord
    status: str


def records_of(run_dirs: Iterable[Path]) -> list[FoundRecord]:
    """Every job submitted from these run directories, oldest first; CorruptFile naming a bad jobs.json."""
    found = [
        FoundRecord(run_dir.name, plan.jobs_json, record)
        for run_dir in run_dirs
        for plan in RunDir(run_dir).plans()
        for record in read_records(plan)
    ]
    return sorted(found, key=lambda item: item.record.submitted_at)


def job_rows(run_dirs: Iterable[Path], *, allow_remote: bool) -> list[JobRow]:
    """Each recorded job with its status, asking each local (or allowed) cluster once."""
    found = records_of(run_dirs)
    statuses: dict[str, dict[str, str] | None] = {}
    rows = []
    for item in found:
        try:
            url = item.address(allow_remote=allow_remote).url
        except AddressError:
            rows.append(JobRow(item.run, item.record, NOT_CONTACTED))
            continue
        if url not in statuses:
            statuses[url] = _jobs_on(url)
        known = statuses[url]
        status = UNREACHABLE if known is None else known.get(item.record.submission_id, "unknown")
        rows.append(JobRow(item.run, item.record, status))
    return rows


def _jobs_on(url: str) -> dict[str, str] | None:
    """{submission id: status} of every job the cluster at `url` knows; None when it does not answer."""
    try:
        jobs = jobs_client(url).list_jobs()
    except (AddressError, RuntimeError, ValueError):  # the cluster is gone, or its Jobs API refuses us
        return None
    return {job.submission_id: job.status.value for job in jobs if job.submission_id}


def run_dirs_for(run: Path | None) -> list[Path]:
    if run is not None:
        if not run.is_dir():
            raise PromotionError(f"{run} is not a run directory (expected e.g. runs/lr_mix)")
        return [run]
    return sorted(path for path in RUNS.glob("*") if path.is_dir())


def find_address(job_id: str, run_dirs: Iterable[Path], *, allow_remote: bool) -> str:
    """The checked cluster address jobs.json recorded for job_id; PromotionError or AddressError naming the fix."""
    for item in records_of(run_dirs):
        if item.record.submission_id == job_id:
            return item.address(allow_remote=allow_remote).url
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
