"""`sweep jobs` over recorded submissions whose cluster is gone, and the submission ids of a plan."""

from __future__ import annotations

from datetime import UTC, datetime

from cli import main
from sweep.files.rundir import PlanDir
from sweep.promote.launch.job_records import JobRecord, append_record, read_records
from sweep.promote.launch.local_cluster import free_port
from sweep.promote.launch.submit import attempt_of, submission_id


def test_submission_ids_count_attempts_of_one_plan_only():
    assert [submission_id("p-1", attempt) for attempt in (1, 2, 3)] == ["cpt-p-1", "cpt-p-1-r2", "cpt-p-1-r3"]
    assert [attempt_of("p-1", job) for job in ("cpt-p-1", "cpt-p-1-r2", "cpt-p-1-r12")] == [1, 2, 12]
    assert [attempt_of("p-1", job) for job in ("cpt-p-12", "cpt-p-1-x", "raysubmit_1", "cpt-p")] == [None] * 4


def test_jobs_lists_a_recorded_job_whose_cluster_is_gone_as_unreachable(tmp_path, capsys):
    plan_dir = PlanDir(tmp_path / "runs" / "lr_mix" / "promotion" / "llama3.1-8b-h100-480-0123abcd")
    plan_dir.path.mkdir(parents=True)
    record = JobRecord(
        submission_id="cpt-llama3.1-8b-h100-480-0123abcd", plan_id="llama3.1-8b-h100-480-0123abcd", attempt=1,
        address=f"http://127.0.0.1:{free_port()}", submitted_at=datetime(2026, 11, 26, tzinfo=UTC),
    )  # fmt: skip
    append_record(plan_dir, record)
    assert read_records(plan_dir) == [record]

    assert main(["jobs", "list", str(tmp_path / "runs" / "lr_mix")]) == 0
    out = capsys.readouterr().out
    assert record.submission_id in out and "unreachable" in out


def test_jobs_of_a_missing_run_directory_is_exit_2(tmp_path, capsys):
    assert main(["jobs", "list", str(tmp_path / "nope")]) == 2
    assert "is not a run directory" in capsys.readouterr().err


def test_the_jobs_read_whole_in_an_80_column_terminal():
    """A submission id, a cluster address and an ISO time in five columns were cut to "cpt-llama3.…" at 80."""
    from rich.console import Console

    from cli.jobs import jobs_listing
    from sweep.promote.launch.jobs import JobRow

    plan_id = "llama3.1-70b-h100-480-0123abcd"
    record = JobRecord(
        submission_id=f"cpt-{plan_id}-r12", plan_id=plan_id, attempt=12, address="http://127.0.0.1:8265",
        submitted_at=datetime(2026, 11, 26, 7, 5, tzinfo=UTC),
    )  # fmt: skip
    console = Console(width=80, record=True)
    console.print(jobs_listing([JobRow("lr_mix_ecommerce_v2", record, "RUNNING")]), crop=False)
    lines = console.export_text().splitlines()
    assert "…" not in "".join(lines) and max(len(line.rstrip()) for line in lines) <= 80
    assert lines[1].split() == [record.submission_id, "RUNNING"]
    assert " ".join(" ".join(lines[2:]).split()) == (
        "run lr_mix_ecommerce_v2, submitted 2026-11-26 07:05 UTC to http://127.0.0.1:8265"
    )
