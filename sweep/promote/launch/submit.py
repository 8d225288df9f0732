"""Submitting a plan's full run through the Ray Jobs API, once per plan.

The submission id is derived from the plan id (itself derived from sweep, promoted point, target and
cluster): `cpt-<plan id>` for the first attempt, `cpt-<plan id>-r2`, `-r3`... for the ones
--force asks for. Submitting a plan whose job the cluster already knows reports that job
instead of starting a second one, when it asks for the same per-submission settings as that job's job.json. The job's folder (job.json only) is uploaded as the job's
working_dir; secrets travel only in its runtime_env env_vars. Each submission is recorded in
runs/<name>/promotion/<id>/jobs.json for `sweep jobs`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sweep.address import ClusterAddress, jobs_client
from sweep.files.compat import JOB
from sweep.files.records import read_model, write_whole
from sweep.files.rundir import PlanDir
from sweep.promote.errors import PromotionError
from sweep.promote.launch.job_records import JobRecord, append_record
from sweep.promote.launch.secrets import secret_env
from train_entry.fullrun.config import JOB_JSON, JobConfig

ID_PREFIX = "cpt-"


def submission_id(plan_id: str, attempt: int) -> str:
    return f"{ID_PREFIX}{plan_id}" if attempt == 1 else f"{ID_PREFIX}{plan_id}-r{attempt}"


def attempt_of(plan_id: str, job_id: str) -> int | None:
    """The attempt number `job_id` is of this plan, or None when it belongs to another plan."""
    match = re.fullmatch(re.escape(f"{ID_PREFIX}{plan_id}") + r"(?:-r(\d+))?", job_id)
    if match is None:
        return None
    return int(match.group(1)) if match.group(1) else 1


def write_upload_dir(job_dir: Path, job_json: str) -> None:
    """Writes job.json into job_dir, the folder Ray uploads as the job's working_dir, which then holds nothing else.

    Ray uploads a working_dir whole and follows the links in it, so anything else there would
    travel with the job: a planted `train_entry/` package would shadow the installed one under
    `python -m`, a link to ~/.ssh would be read and sent. The folder is made here; one that an
    earlier attempt left (its submission failed) may hold that attempt's job.json and nothing else.
    PromotionError naming what it found otherwise, before anything is written.
    """
    for folder in (job_dir.parent, job_dir):
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise PromotionError(
                f"{folder} is not a plain folder (a link or a file); the job's upload folder is made under the "
                "plan's own directory: move it away and submit again"
            )
    job_dir.mkdir(parents=True, exist_ok=True)
    found = sorted(entry for entry in job_dir.iterdir() if entry.name != JOB_JSON or not _plain_file(entry))
    if found:
        raise PromotionError(
            f"{job_dir} is uploaded whole as the job's working_dir and may hold only {JOB_JSON}, but it holds "
            f"{_described(found)}; move them out (they would travel with the job) and submit again"
        )
    write_whole(job_dir / JOB_JSON, job_json)


def _plain_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _described(entries: list[Path], most: int = 5) -> str:
    """'name' (kind) for the first `most` entries, then how many more: a name is at most 255 bytes, so this is short."""
    kinds = [
        f"{entry.name!r} ({'link' if entry.is_symlink() else 'folder' if entry.is_dir() else 'file'})"
        for entry in entries[:most]
    ]
    return ", ".join(kinds) + (f" and {len(entries) - most} more" if len(entries) > most else "")


def _check_same_settings(recorded: Path, wanted: JobConfig) -> None:
    """PromotionError when the cluster's job of this plan was submitted with other per-submission settings than this
    request's (--max-failures, --storage, --stop-on-forgetting, W&B's mode): the plan id covers the plan's
    arguments, not these, so reporting the old job would silently drop the new settings. Nothing to compare when this
    machine holds no record of the job (another machine submitted it)."""
    if not recorded.is_file():
        return
    differing = _differences(read_model(recorded, JobConfig, fmt=JOB).model_dump(), wanted.model_dump())
    if differing:
        shown = "; ".join(f"{key}: {old!r} in the job, {new!r} asked" for key, old, new in differing[:5])
        raise PromotionError(
            f"the cluster already runs this plan's job {wanted.name} ({recorded}) with other settings than this "
            f"submission's: {shown}; add --force to submit a new attempt with them, or ask with the job's own settings to report it"
        )


def _differences(old: object, new: object, key: str = "") -> list[tuple[str, object, object]]:
    """(dotted key, old, new) of every leaf that differs between two model dumps."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(set(old) | set(new))
        return [item for name in keys for item in _differences(old.get(name), new.get(name), f"{key}.{name}".strip("."))]
    return [] if old == new else [(key, old, new)]


@dataclass(frozen=True)
class Submitted:
    submission_id: str
    status: str
    """The job's status on the cluster (PENDING right after a new submission)."""
    new: bool
    """False when the cluster already had this plan's job and nothing was submitted."""


def submit_plan(
    *,
    plan_id: str,
    plan: PlanDir,
    job_for: Callable[[str], JobConfig],
    address: ClusterAddress,
    force: bool,
    python: str = "python",
) -> Submitted:
    """Submits the plan's job unless the cluster has one already (then reports it); --force adds an attempt.

    Its upload folder and jobs.json are written under `plan` (the plan's directory, or a rehearsal's).
    job_for(submission_id) builds the job's config (the id is its Ray Train run name). `python` is
    the interpreter the cluster runs the entrypoint with: one that has cpt-sweep installed.
    """
    client = jobs_client(address.url)
    known = {
        attempt: job
        for job in client.list_jobs()
        if job.submission_id and (attempt := attempt_of(plan_id, job.submission_id)) is not None
    }
    latest = max(known, default=0)
    if latest and not force:
        job = known[latest]
        _check_same_settings(plan.job(job.submission_id) / JOB_JSON, job_for(job.submission_id))
        return Submitted(job.submission_id, job.status.value, new=False)

    job_id = submission_id(plan_id, latest + 1)
    job_dir = plan.job(job_id)
    write_upload_dir(job_dir, JOB.dumps(job_for(job_id)))
    try:
        client.submit_job(
            entrypoint=f"{python} -m train_entry.fullrun.job --config {JOB_JSON}",
            submission_id=job_id,
            runtime_env={"working_dir": str(job_dir), "env_vars": secret_env()},
            metadata={"tool": "cpt-sweep", "plan_id": plan_id, "attempt": str(latest + 1)},
        )
    except RuntimeError as error:
        # Another `promote submit` of the same plan got there first: report its job.
        if "already" not in str(error):
            raise
        return Submitted(job_id, client.get_job_status(job_id).value, new=False)
    append_record(
        plan,
        JobRecord(
            submission_id=job_id,
            plan_id=plan_id,
            attempt=latest + 1,
            address=address.url,
            submitted_at=datetime.now(UTC).replace(microsecond=0),
        ),
    )
    return Submitted(job_id, client.get_job_status(job_id).value, new=True)
