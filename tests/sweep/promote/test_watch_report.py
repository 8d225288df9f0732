"""`sweep promote watch RUN` on a rehearsal's kept job.json and job.log (scripted in Megatron-LM's lines): the table
of measured against predicted, every figure from those files; a missing job or a corrupt job.json is exit 2."""

from __future__ import annotations

from cli import main
from sweep.files.compat import JOB
from sweep.files.rundir import PlanDir
from sweep.promote.rehearse import JOB_LOG
from tests.train_entry.fullrun.predictions import straight
from train_entry.fullrun.config import JOB_JSON, JobConfig, MegatronTrainer
from train_entry.fullrun.evaluations import WatchConfig
from train_entry.megatron.megatron_log import validation_line

WATCH = WatchConfig(
    sets=["general", "domain"],
    tokens_per_iteration=100,
    prediction=straight(4000, end=0.01, upper_start=0.01, upper_end=0.03, source="the proxies (an extrapolation)"),
)


def rehearsed(run_dir, losses: dict[int, tuple[float, float]]):
    job_dir = PlanDir(run_dir / "promotion" / "llama3.1-8b-h100-480-0000abcd").rehearsals / "20261128T100000"
    job = JobConfig(
        name="cpt-llama3.1-8b-h100-480-0000abcd", num_workers=4, workers_per_node=2, use_gpu=False,
        resources_per_worker={"CPU": 1}, tensor_parallel=2, steps=40, checkpoint_interval=10, max_failures=2,
        storage_path=str(job_dir / "ray_results"), watch=WATCH, trainer=MegatronTrainer(run={}),
    )  # fmt: skip
    (job_dir / "jobs" / job.name).mkdir(parents=True)
    (job_dir / "jobs" / job.name / JOB_JSON).write_text(JOB.dumps(job))
    log = [f"fullrun: {validation_line(i, step, loss)}" for step, pair in losses.items() for i, loss in enumerate(pair)]
    (job_dir / JOB_LOG).write_text("\n".join(["INFO ray: started", *log]) + "\n")
    return job_dir


def test_the_table_shows_each_evaluation_against_the_bound_and_the_trip(tmp_path, capsys):
    rehearsed(tmp_path, {0: (2.0, 3.0), 10: (2.01, 2.7), 20: (2.2, 2.6), 30: (2.2, 2.5)})
    assert main(["promote", "watch", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "base losses: domain 3.0000, general 2.0000" in out
    assert "prediction: the proxies (an extrapolation)" in out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["10"], ["20"], ["30"])]
    assert [row[:5] for row in rows] == [
        ["10", "1,000", "0.1000", "0.0050", "0.0150"],
        ["20", "2,000", "0.1333", "0.1000", "0.0200"],
        ["30", "3,000", "0.1667", "0.1000", "0.0250"],
    ]
    assert [" ".join(row[5:]) for row in rows] == [
        "within", "over the bound (1 in a row; trips at 2)", "TRIPPED (2 in a row over the bound)",
    ]  # fmt: skip


def test_no_job_or_a_corrupt_job_json_is_exit_2_naming_it(tmp_path, capsys):
    assert main(["promote", "watch", str(tmp_path)]) == 2
    assert "holds no submitted or rehearsed job: submit or rehearse a plan first" in capsys.readouterr().err
    job_dir = rehearsed(tmp_path, {0: (2.0, 3.0)})
    [job_json] = job_dir.rglob(JOB_JSON)
    job_json.write_text('{"format_version": 1}')
    assert main(["promote", "watch", str(tmp_path)]) == 2
    assert str(job_json) in capsys.readouterr().err
