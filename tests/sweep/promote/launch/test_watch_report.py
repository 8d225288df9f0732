"""`sweep promote watch RUN` on a rehearsal's kept job.json and job.log (scripted in Megatron-LM's lines): the table
of measured against predicted, every figure from those files; a missing job or a corrupt job.json is exit 2."""

from __future__ import annotations

from pathlib import Path

from cli import main
from sweep.files.compat import JOB
from sweep.files.records import read_model
from sweep.promote.launch.promotion import write_plan
from sweep.promote.launch.rehearse import JOB_LOG, RehearsalConfig
from sweep.promote.launch.watching import watch_config
from sweep.promote.plan.plan import make_plan
from sweep.promote.point.point import proxy_trial
from sweep.promote.request.config import PromotionConfig
from tests.sweep.promote.promote_runs import promotable, surrogate_pick, write_run
from train_entry.fullrun.config import JOB_JSON, JobConfig, MegatronTrainer
from train_entry.megatron.megatron_log import validation_line


def rehearsed(run_dir: Path, losses: dict[int, tuple[float, float]]) -> Path:
    """The rehearsal folder of the run's plan as `sweep promote rehearse` leaves it: its job.json holding the watch
    the plan gives a rehearsal, and its job.log with each iteration's (general, domain) losses in Megatron-LM's
    lines (a non-English set, where the plan has one, at the general loss). The run is made (write_run: a surrogate's
    pick, no non-English data) where there is none, and finished (promotable) where it has only a study."""
    if not (run_dir / "run.json").exists():
        write_run(run_dir, pick=surrogate_pick(0.13, "1:2"), non_english_share=0.0)
    elif not (run_dir / "best.json").exists():
        promotable(run_dir)
    plan = make_plan(run_dir, PromotionConfig(target="llama3.1-8b"), unconfirmed=True)
    trial = proxy_trial(run_dir, plan.sweep.promoted)
    config = RehearsalConfig()
    tokens = config.run_tokens(trial.proxy.seq_len)
    watch = watch_config(plan, stop_on_forgetting=False, tokens_per_iteration=tokens // config.steps, run_tokens=tokens)
    job_dir = write_plan(plan, run_dir).rehearsals / "20261128T100000"
    job = JobConfig(
        name=f"cpt-{plan.id}", num_workers=4, workers_per_node=2, use_gpu=False, resources_per_worker={"CPU": 1},
        tensor_parallel=2, steps=config.steps, checkpoint_interval=10, max_failures=2,
        storage_path=str(job_dir / "ray_results"), watch=watch, trainer=MegatronTrainer(run={}),
    )  # fmt: skip
    (job_dir / "jobs" / job.name).mkdir(parents=True)
    (job_dir / "jobs" / job.name / JOB_JSON).write_text(JOB.dumps(job))
    by_side = {"general": 0, "domain": 1, "non_english": 0}
    log = [
        f"fullrun: {validation_line(index, step, pair[by_side[side]])}"
        for step, pair in losses.items()
        for index, side in enumerate(watch.sets)
    ]
    (job_dir / JOB_LOG).write_text("\n".join(["INFO ray: started", *log]) + "\n")
    return job_dir


def test_the_table_shows_each_evaluation_against_the_bound_and_the_trip(tmp_path, capsys):
    job_dir = rehearsed(tmp_path / "lr_mix", {0: (2.0, 3.0), 10: (2.01, 2.7), 20: (2.2, 2.6), 30: (2.2, 2.5)})
    (job_json,) = job_dir.rglob(JOB_JSON)
    watch = read_model(job_json, JobConfig, fmt=JOB).watch
    capsys.readouterr()
    assert main(["promote", "watch", str(tmp_path / "lr_mix")]) == 0
    out = capsys.readouterr().out
    assert "base losses: domain 3.0000, general 2.0000" in out
    assert "prediction: the proxies: forgetting 0.0160 at the end" in out
    per = watch.tokens_per_iteration
    upper = {step: watch.prediction.upper_at(step * per) for step in (10, 20, 30)}
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["10"], ["20"], ["30"])]
    assert [row[:5] for row in rows] == [
        ["10", f"{10 * per:,}", "0.1000", "0.0050", f"{upper[10]:.4f}"],
        ["20", f"{20 * per:,}", "0.1333", "0.1000", f"{upper[20]:.4f}"],
        ["30", f"{30 * per:,}", "0.1667", "0.1000", f"{upper[30]:.4f}"],
    ]
    assert [" ".join(row[5:]) for row in rows] == [
        "within", "over the bound (1 in a row; trips at 2)", "TRIPPED (2 in a row over the bound)",
    ]  # fmt: skip


def test_no_job_or_a_corrupt_job_json_is_exit_2_naming_it(tmp_path, capsys):
    run_dir = write_run(tmp_path / "lr_mix", pick=surrogate_pick(0.13, "1:2"), non_english_share=0.0)
    assert main(["promote", "watch", str(run_dir)]) == 2
    assert "holds no submitted or rehearsed job: submit or rehearse a plan first" in capsys.readouterr().err
    job_dir = rehearsed(run_dir, {0: (2.0, 3.0)})
    [job_json] = job_dir.rglob(JOB_JSON)
    job_json.write_text('{"format_version": 1}')
    assert main(["promote", "watch", str(run_dir)]) == 2
    assert str(job_json) in capsys.readouterr().err


# A team's own launch of the plan's pretrain_gpt.sh, its stdout as Megatron-LM core_v0.16.1 prints it: the
# --skip-train launch's base evaluation ("iteration 0 on validation set", training.py line 1069), then the training
# launch's iteration lines (training_log, lines 2033-2083) and evaluations; each evaluation line is
# f' validation{suffix} loss at {prefix} | ' + '{} value: {:.6E} | ' + '{} PPL: {:.6E} | ' per loss key
# (evaluate_and_print_results, lines 3254-3258), framed by dashes (print_rank_last('-' * length)).
MEGATRON_LOG = """\
using world size: 480, data-parallel size: 240, context-parallel size: 1, tensor-model-parallel size: 2
> building train, validation, and test datasets ...
skipping training (--skip-train is on) ...
-----------------------------------------------------------------------------------------------------------------
 validation-0 loss at iteration 0 on validation set | lm loss value: 2.000000E+00 | lm loss PPL: 7.389056E+00 | 
-----------------------------------------------------------------------------------------------------------------
 validation-1 loss at iteration 0 on validation set | lm loss value: 3.000000E+00 | lm loss PPL: 2.008554E+01 | 
-----------------------------------------------------------------------------------------------------------------
 validation-2 loss at iteration 0 on validation set | lm loss value: 4.000000E+00 | lm loss PPL: 5.459815E+01 | 
 [2026-11-30 08:00:00.000000] iteration     2080/   84772 | consumed samples:      2995200 | elapsed time per \
iteration (ms): 3460.1 | learning rate: 2.999000E-05 | global batch size:  1440 | lm loss: 2.512345E+00 | loss \
scale: 1.0 | grad norm: 0.412 | number of skipped iterations:   0 | number of nan iterations:   0 |
 validation-0 loss at iteration 2080 | lm loss value: 2.020000E+00 | lm loss PPL: 7.538325E+00 | 
 validation-1 loss at iteration 2080 | lm loss value: 2.700000E+00 | lm loss PPL: 1.487973E+01 | 
 validation-2 loss at iteration 2080 | lm loss value: 4.040000E+00 | lm loss PPL: 5.682633E+01 | 
"""


def planned(finished_run):
    run_dir = finished_run()
    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b"]) == 0
    return run_dir


def test_a_plain_megatron_lm_log_is_read_against_the_plan(finished_run, tmp_path, capsys):
    run_dir = planned(finished_run)
    log = tmp_path / "pretrain_gpt.log"
    log.write_text(MEGATRON_LOG)
    capsys.readouterr()
    assert main(["promote", "watch", str(run_dir), "--log", str(log)]) == 0
    out = capsys.readouterr().out
    # The plan's sets are general, domain, non-English at the promoted point's share 0.1 of general.
    assert f"(log: {log})" in out
    assert f"base losses: domain 3.0000, general {0.9 * 2.0 + 0.1 * 4.0:.4f}" in out
    (row,) = [line.split() for line in out.splitlines() if line.split()[:1] == ["2080"]]
    general = 0.9 * 2.02 + 0.1 * 4.04
    # 2080 iterations of the plan's 1440 x 8192-token batches; the sweep's run holds no interval: no bound.
    assert row[:4] == ["2080", f"{2080 * 1440 * 8192:,}", f"{1 - 2.7 / 3.0:.4f}", f"{general / 2.2 - 1:.4f}"]
    assert " ".join(row[4:]) == "- no credible prediction"


def test_a_malformed_megatron_lm_log_is_exit_2_naming_the_file_and_line(finished_run, tmp_path, capsys):
    run_dir = planned(finished_run)
    log = tmp_path / "pretrain_gpt.log"
    bad = {
        " validation-1 loss at iteration 2080 | lm loss value: 2.7x0000E+00 |": "not in Megatron-LM's form",
        " validation loss at iteration 2080 | lm loss value: 2.700000E+00 |": "without a set number",
        " validation-3 loss at iteration 2080 | lm loss value: 2.700000E+00 |": "validation set 3, where plan",
        " validation-1 loss at iteration 2080 | lm loss value: \udcff.700000E+00 |": "not in Megatron-LM's form",
    }
    for line, complaint in bad.items():
        lines = MEGATRON_LOG.splitlines()
        lines[11] = line  # validation-1 at iteration 2080
        log.write_bytes("\n".join(lines).encode("utf-8", errors="surrogateescape"))
        capsys.readouterr()
        assert main(["promote", "watch", str(run_dir), "--log", str(log)]) == 2
        err = capsys.readouterr().err
        assert f"{log}, line 12: " in err and complaint in err, err
    assert main(["promote", "watch", str(run_dir), "--log", str(tmp_path / "missing.log")]) == 2
    assert "missing.log: cannot read it" in capsys.readouterr().err
    assert main(["promote", "watch", str(run_dir), "--log", str(log), "--plan", "another"]) == 2
    assert "holds no plan 'another'" in capsys.readouterr().err
