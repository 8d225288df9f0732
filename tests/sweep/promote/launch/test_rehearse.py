"""`sweep promote rehearse RUN` end to end on a simulated 2-node cluster, with its fault drill: a worker
node is killed after the first checkpoint, the job resumes from the latest checkpoint and finishes the
planned steps; no secret lands in any file or log line; every Ray process is gone afterwards."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch

from cli import main
from sweep.files.rundir import RunDir
from sweep.promote.launch.rehearse import JOB_LOG, RehearsalConfig
from sweep.run.prepare import prepare
from sweep.run.tracking import TrackingConfig, WandbConfig
from sweep.spec.spec import load_spec
from sweep.study.config import ConfirmationConfig
from tests.conftest import TINY_SPEC
from tests.sweep.promote.promote_runs import write_run
from tests.sweep.promote.ray_processes import processes_mentioning
from tests.wandb_files import offline_runs, records
from train_entry.file_format import TRIAL_CONFIG
from train_entry.fullrun.job import RESULT_JSON
from train_entry.fullrun.toy import STATE_FILE
from train_entry.mix import MixRatio

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SECRET = "wandb-secret-fedcba9876543210"
PLAN = RehearsalConfig()


@pytest.fixture
def rehearsal_run(tmp_path, write_tiny_spec) -> Path:
    """A finished run whose optimum's trial config points at a real (barely pretrained) tiny base."""
    builtin = {**TINY_SPEC["base"]["builtin"], "pretrain_steps": 20, "warmup_steps": 2}
    spec = write_tiny_spec("rehearse.yaml", base={**TINY_SPEC["base"], "builtin": builtin})
    prepared = prepare(load_spec(spec))
    # The run's study is this spec's, with the two confirmation trials write_run's pick is confirmed by.
    search = prepared.spec.search.model_copy(update={"confirmation": ConfirmationConfig(seeds=2)})
    run_dir = write_run(
        tmp_path / "runs" / "lr_mix", lr_fraction=0.1, mix="1:1", non_english_share=0.1,
        spec=prepared.spec.model_copy(update={"search": search}), base=prepared.interim_base,
    )  # fmt: skip
    run = RunDir(run_dir)
    trial = prepared.trial_config(lr_fraction=0.1, mix=MixRatio.parse("1:1"), output_dir=run.trial(7))
    run.trial_config(7).write_text(TRIAL_CONFIG.dumps(trial))
    return run_dir


def test_rehearsal_survives_a_lost_node_and_finishes_the_planned_steps(rehearsal_run, capsys, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", SECRET)
    assert main(["promote", "rehearse", str(rehearsal_run), "--target", "llama3.1-8b"]) == 0
    captured = capsys.readouterr()
    out = captured.out

    # Placed node by node: the TP-2 groups (ranks 0-1, 2-3) each on one node, two nodes in all.
    placements = re.findall(r"fullrun: placement node (\w+): ranks ([\d, ]+)", out)
    assert [ranks for _, ranks in placements[:2]] == ["0, 1", "2, 3"]
    assert placements[0][0] != placements[1][0]

    killed = re.search(r"fault drill - killing node (\w+) after the checkpoint at step (\d+)", out)
    assert killed and killed.group(1) == placements[1][0]  # the node holding the last ranks
    resumed = [
        (int(k), int(n)) for k, n in re.findall(r"rehearsal: resumed from step (\d+), recomputing (\d+) steps", out)
    ]
    assert len(resumed) == 1, out
    [(resumed_from, recomputed)] = resumed
    assert resumed_from >= PLAN.checkpoint_interval and resumed_from % PLAN.checkpoint_interval == 0
    assert recomputed <= PLAN.checkpoint_interval
    assert f"final checkpoint at step {PLAN.steps} of {PLAN.steps}" in out
    assert "job SUCCEEDED" in out

    [rehearsal] = (next((rehearsal_run / "promotion").iterdir()) / "rehearsal").iterdir()
    [job_dir] = (rehearsal / "ray_results").iterdir()
    result = json.loads((job_dir / RESULT_JSON).read_text())
    state = torch.load(Path(result["checkpoint"]) / STATE_FILE, weights_only=True)
    assert state["step"] == PLAN.steps == result["step"]
    assert [step for step, _ in state["losses"]] == list(range(10, PLAN.steps + 1, PLAN.checkpoint_interval))
    assert all(math.isfinite(loss) and 0 < loss < 20 for _, loss in state["losses"])
    assert "fullrun: resumed from step" in (rehearsal / JOB_LOG).read_text()

    # No secret in any file the tool wrote, nor in anything it printed; the cluster is gone.
    assert [path for path in rehearsal_run.rglob("*") if path.is_file() and SECRET.encode() in path.read_bytes()] == []
    assert SECRET not in out + captured.err
    session = re.search(r"Ray session under (\S+) ", out).group(1)
    assert processes_mentioning(session) == []
    assert not Path(session).exists()


def test_a_forced_overshoot_trips_the_watch_alerts_in_wandb_and_stops_the_job_cleanly(
    rehearsal_run, tiny_spec_path, capsys, monkeypatch
):
    """The watch drill: each validation set apart in Megatron-LM's lines, the base at step 0, the watch tripping at
    its second evaluation over a bound no loss stays under, a W&B alert in the sweep's project and group, the job
    checkpointed and stopped with the reason in Ray's status; then `sweep promote watch` on the result."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    spec = load_spec(tiny_spec_path).model_copy(
        update={"tracking": TrackingConfig(wandb=WandbConfig(mode="offline", project="cpt-rehearsal"))}
    )
    RunDir(rehearsal_run).write_spec_copy(spec)
    drill = ["--no-fault-drill", "--overshoot-drill", "--stop-on-forgetting"]
    assert main(["promote", "rehearse", str(rehearsal_run), "--target", "llama3.1-8b", *drill]) == 0
    out = capsys.readouterr().out

    # Three sets apart (general, domain, non-English) at the base's step 0 and at each evaluation, as Megatron-LM logs.
    for step in (0, 10, 20):
        assert [int(i) for i in re.findall(rf"validation-(\d) loss at iteration {step} \|", out)] == [0, 1, 2], out
    assert "validation-0 loss at iteration 30" not in out  # stopped after the evaluation at step 20
    assert "fullrun: watch base losses: domain" in out
    assert re.search(r"fullrun: watch WARNING: iteration 20, [\d,]+ tokens: forgetting -?\d\.\d{4}.* exceeds", out)
    assert "job FAILED; final checkpoint at step 20 of 40" in out
    assert "rehearsal: stopped by the forgetting watch (--stop-on-forgetting): WARNING: iteration 20" in out
    assert "Ray's status message holds the reason" in out

    [rehearsal] = (next((rehearsal_run / "promotion").iterdir()) / "rehearsal").iterdir()
    [job_json] = rehearsal.glob("jobs/*/job.json")
    assert json.loads(job_json.read_text())["trainer"]["min_step_seconds"] == 0.0  # no fault drill: nothing waits
    [run] = offline_runs(rehearsal / "ray_results")
    assert (run.group, run.job_type, run.config["sweep"]["name"]) == ("lr_mix", "full-run", "lr_mix")
    assert [row["_step"] for row in run.history] == [10, 20]
    alerts = [r.alert for r in records(next(run.path.glob("run-*.wandb"))) if r.WhichOneof("record_type") == "alert"]
    assert [(a.title, a.level) for a in alerts] == [("forgetting over the prediction", "WARN")]
    assert "iteration 20" in alerts[0].text

    assert main(["promote", "watch", str(rehearsal_run)]) == 0
    table = capsys.readouterr().out
    assert "the rehearsal's forced-overshoot drill" in table
    assert [line.split()[0] for line in table.splitlines() if "TRIPPED" in line] == ["20"]
