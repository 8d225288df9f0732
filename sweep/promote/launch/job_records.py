"""jobs.json: the submissions of one plan, kept so that `sweep jobs` can find each job again.

The file lives in a run directory, which is shared, copied and received from colleagues, so it
is read back as untrusted input: bounded in size and validated field by field. A corrupt one is
an error naming it (exit code 2); the address it records is checked like a typed one before use.
"""

from __future__ import annotations

from pydantic import AwareDatetime, ConfigDict, Field, field_validator

from sweep.address import parse_address
from sweep.files.compat import JOBS
from sweep.files.records import CorruptFile, read_model, write_model
from sweep.files.rundir import PlanDir, Segment
from train_entry.config import StrictConfig

MAX_JOBS_JSON_BYTES = 1 << 20
"""1 MiB: a record is ~250 bytes, so room for ~4 000 submissions of one plan; a larger file was not written by us."""
MAX_ATTEMPTS = 10_000
"""More --force resubmissions of one plan than anyone makes by hand."""
MAX_ADDRESS_CHARACTERS = 300
"""A scheme, a host name (at most 253 characters) and a port."""


class JobRecord(StrictConfig):
    """One submission as jobs.json keeps it: enough to find the job again, nothing secret."""

    model_config = ConfigDict(strict=True)

    submission_id: Segment
    """Plan and submission ids: target and cluster names, a hash and an attempt suffix, so never markup or a path."""
    plan_id: Segment
    attempt: int = Field(ge=1, le=MAX_ATTEMPTS)
    address: str = Field(max_length=MAX_ADDRESS_CHARACTERS)
    """The Jobs API URL it was submitted to, without any user:password part."""
    submitted_at: AwareDatetime
    """UTC."""

    @field_validator("address")
    @classmethod
    def _a_jobs_api_url(cls, address: str) -> str:
        # Only its form here: whether a remote one may be contacted is the reader's --allow-remote.
        return parse_address(address, allow_remote=True, source="address").url


class JobRecords(StrictConfig):
    """The whole file: every submission of the plan, oldest first."""

    jobs: list[JobRecord]


def read_records(plan: PlanDir) -> list[JobRecord]:
    """The plan's submissions; [] when it has none; CorruptFile naming jobs.json when it is not ours, or when a record
    names another plan than the folder it sits in."""
    if not plan.jobs_json.exists():
        return []
    records = read_model(plan.jobs_json, JobRecords, fmt=JOBS, max_bytes=MAX_JOBS_JSON_BYTES).jobs
    for index, record in enumerate(records):
        if record.plan_id != plan.id:
            raise CorruptFile(
                f"{plan.jobs_json}: jobs.{index}.plan_id is {record.plan_id!r}, but the plan's folder is {plan.id!r}: "
                "a plan's submissions are recorded in its own folder"
            )
    return records


def append_record(plan: PlanDir, record: JobRecord) -> None:
    write_model(plan.jobs_json, JobRecords(jobs=[*read_records(plan), record]), JOBS)
