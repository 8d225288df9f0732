"""`sweep promote watch` takes no path from a file's content: a plan's id and a job's name must be their folder's name,
and a plan or job folder that is a link leading out of the run is refused; each is exit 2 naming the file, with
nothing written anywhere (issue 52: an id of '../../../x' replaced x/watch.json three folders above the plan, a
plan folder linked out of the run got watch.json written into its target, and an id not its folder's name was a
FileNotFoundError)."""

from __future__ import annotations

import json
import shutil

from cli import main
from tests.hostile import files_but_the_study
from tests.sweep.promote.launch.test_watch_report import MEGATRON_LOG, planned, rehearsed
from train_entry.fullrun.config import JOB_JSON


def watch(run_dir, *extra: str) -> int:
    return main(["promote", "watch", str(run_dir), *extra])


def plan_dir_of(run_dir):
    (plan_dir,) = (run_dir / "promotion").iterdir()
    return plan_dir


def edit_plan_id(plan_dir, plan_id: str) -> None:
    path = plan_dir / "plan.json"
    data = json.loads(path.read_text())
    data["id"] = plan_id
    path.write_text(json.dumps(data))


def refused(capsys) -> str:
    (line,) = capsys.readouterr().err.strip().splitlines()
    return line


def test_a_plan_id_that_climbs_out_of_the_run_is_refused_and_nothing_is_written(finished_run, tmp_path, capsys):
    run_dir = planned(finished_run)
    plan_dir = plan_dir_of(run_dir)
    (tmp_path / "x").mkdir()  # where ../../../x leads from the plan's folder's parent
    edit_plan_id(plan_dir, "../../../x")
    log = tmp_path / "pretrain_gpt.log"
    log.write_text(MEGATRON_LOG)
    before = files_but_the_study(tmp_path)
    capsys.readouterr()

    assert watch(run_dir, "--log", str(log), "--plan", plan_dir.name) == 2

    line = refused(capsys)
    assert f"{plan_dir / 'plan.json'} is not a promotion plan cpt-sweep wrote: id: " in line and "'../../../x'" in line
    assert files_but_the_study(tmp_path) == before


def test_a_plan_id_that_is_not_its_folders_name_is_refused_naming_both(finished_run, tmp_path, capsys):
    run_dir = planned(finished_run)
    plan_dir = plan_dir_of(run_dir)
    edit_plan_id(plan_dir, "llama3.1-8b-h100-480-00000000")
    log = tmp_path / "pretrain_gpt.log"
    log.write_text(MEGATRON_LOG)
    before = files_but_the_study(tmp_path)
    capsys.readouterr()

    assert watch(run_dir, "--log", str(log), "--plan", plan_dir.name) == 2

    assert refused(capsys) == (
        f"error: {plan_dir / 'plan.json'}: id is 'llama3.1-8b-h100-480-00000000', but the plan's folder is "
        f"'{plan_dir.name}': a plan lives in the folder its id names; promote the run again to write it whole"
    )
    assert files_but_the_study(tmp_path) == before


def test_a_plan_folder_linked_out_of_the_run_is_not_read_or_written(finished_run, tmp_path, capsys):
    run_dir = planned(finished_run)
    plan_dir = plan_dir_of(run_dir)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(plan_dir, elsewhere)
    plan_dir.symlink_to(elsewhere)
    log = tmp_path / "pretrain_gpt.log"
    log.write_text(MEGATRON_LOG)
    before = files_but_the_study(tmp_path)
    capsys.readouterr()

    assert watch(run_dir, "--log", str(log)) == 2

    line = refused(capsys)
    assert line.startswith(f"error: {plan_dir} leads outside the run directory {run_dir}")
    assert files_but_the_study(tmp_path) == before and not (elsewhere / "watch.json").exists()


def test_a_job_folder_linked_out_of_the_run_is_not_read_or_written(tmp_path, capsys):
    job_dir = rehearsed(tmp_path / "run", {0: (2.0, 3.0), 10: (2.01, 2.7)})
    (job,) = (job_dir / "jobs").iterdir()
    elsewhere = tmp_path / "elsewhere"
    shutil.move(job, elsewhere)
    job.symlink_to(elsewhere)
    before = files_but_the_study(tmp_path)

    assert watch(tmp_path / "run") == 2

    assert refused(capsys).startswith(f"error: {job} leads outside the run directory {tmp_path / 'run'}")
    assert files_but_the_study(tmp_path) == before


def test_a_job_record_naming_another_job_than_its_folder_is_refused(tmp_path, capsys):
    job_dir = rehearsed(tmp_path / "run", {0: (2.0, 3.0), 10: (2.01, 2.7)})
    (job,) = (job_dir / "jobs").iterdir()
    data = json.loads((job / JOB_JSON).read_text())
    data["name"] = "cpt-another"
    (job / JOB_JSON).write_text(json.dumps(data))
    before = files_but_the_study(tmp_path)

    assert watch(tmp_path / "run") == 2

    assert refused(capsys) == (
        f"error: {job / JOB_JSON}: name is 'cpt-another', but the job's folder is '{job.name}': a job's record lives "
        "in the folder its submission id names"
    )
    assert files_but_the_study(tmp_path) == before
