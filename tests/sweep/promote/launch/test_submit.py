"""`sweep promote submit` against a real local Ray head (started here on 127.0.0.1, stopped after):
one job per plan, --force for a new attempt, `sweep jobs list` listing them, and secrets kept out of every
file and log line while still reaching the job through its runtime environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli import main
from sweep.address import jobs_client
from sweep.promote.launch.local_cluster import ClusterShape, LocalCluster
from sweep.promote.plan.plan import Plan
from tests.sweep.promote.ray_processes import processes_mentioning

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SECRET = "wandb-secret-0123456789abcdef"


@pytest.fixture
def cluster():
    with LocalCluster(shape=ClusterShape(nodes=2, cpus_per_node=1)) as cluster:
        session = cluster.session_root
        yield cluster
    assert processes_mentioning(session) == []  # stopped after: no process of its session is left


def real_inputs(tmp_path: Path) -> list[str]:
    """Paths on the (imaginary) cluster's shared storage: a submission refuses placeholders."""
    return [
        "--data-prefix", "general=/shared/data/general_text", "--data-prefix", "non_english=/shared/data/multi_text",
        "--data-prefix", "domain=/shared/data/domain_text", "--tokenizer", "/shared/tokenizer",
        "--base-checkpoint", "/shared/base", "--save-dir", str(tmp_path / "checkpoints"),
        "--valid-prefix", "general=/shared/valid/general_text", "--valid-prefix", "domain=/shared/valid/domain_text",
        "--valid-prefix", "non_english=/shared/valid/multi_text",
    ]  # fmt: skip


def files_containing(root: Path, text: str) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file() and text.encode() in path.read_bytes()]


def test_the_same_plan_submitted_twice_is_one_job_and_force_adds_an_attempt(
    finished_run, cluster, capsys, monkeypatch, tmp_path
):
    monkeypatch.setenv("WANDB_API_KEY", SECRET)
    monkeypatch.setenv("RAY_ADDRESS", "http://10.255.255.1:8265")  # Ray's client would prefer it to --address
    run_dir = finished_run()
    submit = ["promote", "submit", str(run_dir), "--target", "llama3.1-8b", *real_inputs(tmp_path)]
    submit += ["--address", cluster.address]

    assert main(submit) == 0
    first = capsys.readouterr()
    assert main(submit) == 0
    second = capsys.readouterr()

    [plan_dir] = (run_dir / "promotion").iterdir()
    job_id = f"cpt-{Plan.read(plan_dir).id}"
    client = jobs_client(cluster.address)
    assert [job.submission_id for job in client.list_jobs()] == [job_id]
    assert f"submitted job {job_id}" in first.out
    assert f"already has job {job_id}" in second.out and "nothing submitted" in second.out

    # Other per-submission settings are not the running job's: refused, naming them, and nothing submitted.
    assert main([*submit, "--max-failures", "7"]) == 2
    refused = capsys.readouterr().err
    assert "max_failures" in refused and "7 asked" in refused and "--force" in refused
    assert [job.submission_id for job in client.list_jobs()] == [job_id]

    assert main([*submit, "--force"]) == 0
    third = capsys.readouterr()
    assert f"submitted job {job_id}-r2" in third.out
    assert sorted(job.submission_id for job in client.list_jobs()) == [job_id, f"{job_id}-r2"]

    assert main(["jobs", "list", str(run_dir)]) == 0
    listing = capsys.readouterr().out
    assert job_id in listing and f"{job_id}-r2" in listing and "unreachable" not in listing

    # The secret reaches the job through its runtime environment, and nowhere else.
    assert client.get_job_info(job_id).runtime_env["env_vars"]["WANDB_API_KEY"] == SECRET
    assert files_containing(run_dir, SECRET) == []
    for output in (first, second, third):
        assert SECRET not in output.out + output.err
    assert SECRET not in client.get_job_logs(job_id)


def test_jobs_logs_of_an_unrecorded_job_needs_an_address(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["jobs", "logs", "cpt-nothing"]) == 2
    assert "give its cluster with --address" in capsys.readouterr().err
