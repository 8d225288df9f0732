"""`sweep jobs` over jobs.json files it did not write: a corrupt one is exit 2 naming it, a recorded remote
address is not contacted without --allow-remote, and no case creates or removes a file."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cli import main
from sweep.files.compat import JOBS
from sweep.files.rundir import PlanDir
from sweep.promote.launch.job_records import MAX_JOBS_JSON_BYTES, JobRecord, append_record, read_records
from tests.hostile import no_connections, tree

PLAN_ID = "llama3.1-8b-h100-480-0123abcd"
JOB_ID = f"cpt-{PLAN_ID}"
REMOTE = "http://203.0.113.7:8265"
"""TEST-NET-3 (RFC 5737): nobody's cluster; a test that contacts it would hang, not pass."""


@pytest.fixture
def plan_dir(tmp_path, monkeypatch) -> PlanDir:
    """runs/lr_mix/promotion/<plan id>/ under tmp_path, which is the working directory."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "runs" / "lr_mix" / "promotion" / PLAN_ID
    path.mkdir(parents=True)
    return PlanDir(path)


def record(address: str) -> JobRecord:
    submitted = datetime(2026, 11, 26, tzinfo=UTC)
    return JobRecord(submission_id=JOB_ID, plan_id=PLAN_ID, attempt=1, address=address, submitted_at=submitted)


def run_cli(argv: list[str], root: Path, capsys) -> tuple[int, str, str]:
    """main(argv) with no connection allowed; asserts it created and removed nothing under root."""
    before = tree(root)
    with no_connections() as tried:
        code = main(argv)
    assert tree(root) == before
    out, err = capsys.readouterr()
    return code, out, err + "".join(f"\ntried {address}" for address in tried)


def test_records_round_trip_through_the_file(plan_dir):
    first, second = record("http://127.0.0.1:8265"), record("http://[::1]:8265")
    append_record(plan_dir, first)
    append_record(plan_dir, second)
    assert read_records(plan_dir) == [first, second]


RECORD = {"submission_id": JOB_ID, "plan_id": PLAN_ID, "attempt": 1, "address": "http://127.0.0.1:8265"}
RECORD |= {"submitted_at": "2026-11-26T00:00:00+00:00"}


def _jobs(records: list[dict]) -> bytes:
    return JOBS.dumps_data({"jobs": records}).encode()


CORRUPT = {
    "not JSON": b"{not json",
    "no jobs key": JOBS.dumps_data({}).encode(),
    "empty objects": _jobs([{}, {}]),
    "a bare list (no format version)": json.dumps([RECORD]).encode(),
    "a string attempt": _jobs([RECORD | {"attempt": "1"}]),
    "an unknown key": _jobs([RECORD | {"command": "rm -rf ~"}]),
    "markup for an id": _jobs([RECORD | {"submission_id": "[red]x"}]),
    "a path for a plan id": _jobs([RECORD | {"plan_id": "../../etc"}]),
    "another plan's id than its folder's": _jobs([RECORD | {"plan_id": "llama3.1-8b-h100-480-ffffffff"}]),
    "a Ray Client address": _jobs([RECORD | {"address": "ray://127.0.0.1:10001"}]),
    "a naive time": _jobs([RECORD | {"submitted_at": "2026-11-26T00:00:00"}]),
    "too large": b"{" + b" " * MAX_JOBS_JSON_BYTES + b"}",
}


@pytest.mark.parametrize("content", CORRUPT.values(), ids=CORRUPT.keys())
@pytest.mark.parametrize("command", [["jobs", "list", "runs/lr_mix"], ["jobs", "list"], ["jobs", "logs", JOB_ID]])
def test_a_corrupt_jobs_json_is_exit_2_naming_it(plan_dir, tmp_path, capsys, content, command):
    plan_dir.jobs_json.write_bytes(content)
    code, out, err = run_cli(command, tmp_path, capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {Path('runs/lr_mix/promotion') / PLAN_ID / 'jobs.json'}")
    assert err.count("\n") == 1  # one line, no traceback


def test_a_folder_named_jobs_json_is_exit_2_naming_it(plan_dir, tmp_path, capsys):
    plan_dir.jobs_json.mkdir()
    code, _, err = run_cli(["jobs", "list", "runs/lr_mix"], tmp_path, capsys)
    assert code == 2 and "jobs.json" in err and err.count("\n") == 1


def test_a_listing_does_not_contact_a_recorded_remote_cluster(plan_dir, tmp_path, capsys):
    append_record(plan_dir, record(REMOTE))
    code, out, err = run_cli(["jobs", "list", "runs/lr_mix"], tmp_path, capsys)
    assert (code, err) == (0, "")  # the other rows of a listing are still true: the row says why it has no status
    assert JOB_ID in out and "not contacted: remote address, pass --allow-remote" in " ".join(out.split())


def test_a_listing_with_allow_remote_asks_the_recorded_cluster(plan_dir, tmp_path, capsys):
    append_record(plan_dir, record(REMOTE))
    code, out, err = run_cli(["jobs", "list", "runs/lr_mix", "--allow-remote"], tmp_path, capsys)
    assert code == 0 and "unreachable" in out
    assert "tried ('203.0.113.7', 8265)" in err  # it did try: the flag is what lets a remote cluster be asked


def test_logs_of_a_job_recorded_on_a_remote_cluster_is_exit_2_naming_the_file(plan_dir, tmp_path, capsys):
    append_record(plan_dir, record(REMOTE))
    code, out, err = run_cli(["jobs", "logs", JOB_ID], tmp_path, capsys)
    assert code == 2 and out == ""
    jobs_json = Path("runs/lr_mix/promotion") / PLAN_ID / "jobs.json"
    assert err.startswith(f"error: {jobs_json}: address {REMOTE!r}: 203.0.113.7 is not a loopback address")
    assert "--allow-remote" in err and err.count("\n") == 1


def test_a_password_planted_in_a_recorded_address_is_never_shown(plan_dir, tmp_path, capsys):
    plan_dir.jobs_json.write_bytes(_jobs([RECORD | {"address": "http://admin:hunter2@203.0.113.7:8265"}]))
    for command in (["jobs", "list"], ["jobs", "logs", JOB_ID]):
        _, out, err = run_cli(command, tmp_path, capsys)
        assert "hunter2" not in out + err and "203.0.113.7" in out + err
