"""W&B tracking: where the mode is decided, and what a real sweep's offline runs hold when read back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sweep.run.tracking import (
    STEP_METRIC,
    TrackingError,
    WandbConfig,
    WandbTarget,
    resolve_wandb,
    worker_env,
)
from tests.wandb_files import UNREACHABLE_WANDB, WANDB_SECRET, offline_runs
from train_entry.trial_config import Metrics

KEY = "0123456789abcdef" * 3


@pytest.fixture
def no_netrc(tmp_path, monkeypatch):
    """No `wandb login` credentials on this machine: an empty netrc."""
    netrc = tmp_path / "netrc"
    netrc.write_text("")
    monkeypatch.setenv("NETRC", str(netrc))
    return netrc


def test_absent_or_disabled_tracking_turns_wandb_off(no_netrc):
    assert resolve_wandb(None, environ={"WANDB_MODE": "online", "WANDB_API_KEY": KEY}) == (None, None)
    assert resolve_wandb(WandbConfig(mode="disabled"), environ={"WANDB_API_KEY": KEY}) == (None, None)
    assert resolve_wandb(WandbConfig(mode="online"), environ={"WANDB_MODE": "disabled", "WANDB_API_KEY": KEY}) == (
        None,
        None,
    )


def test_online_with_a_key_logs_online_and_forwards_only_the_credentials(no_netrc):
    environ = {"WANDB_API_KEY": KEY, "WANDB_BASE_URL": "https://wandb.example", "HOME": "/home/x"}
    target, notice = resolve_wandb(WandbConfig(project="p", entity="team"), environ=environ)
    assert target == WandbTarget(mode="online", project="p", entity="team") and notice is None
    assert worker_env(target, environ=environ) == {"WANDB_API_KEY": KEY, "WANDB_BASE_URL": "https://wandb.example"}
    offline = WandbTarget(mode="offline", project="p", entity=None)
    assert worker_env(offline, environ=environ) == {} and worker_env(None, environ=environ) == {}


def test_online_without_a_key_falls_back_to_offline_with_one_notice(no_netrc):
    target, notice = resolve_wandb(WandbConfig(mode="online"), environ={})
    assert target.mode == "offline"
    assert "no API key" in notice and "tracking.wandb.mode is online" in notice and "wandb sync" in notice
    target, notice = resolve_wandb(WandbConfig(mode="offline"), environ={"WANDB_MODE": "online"})
    assert target.mode == "offline" and "WANDB_MODE=online" in notice


def test_a_netrc_login_counts_as_a_key(no_netrc):
    no_netrc.write_text(f"machine api.forge.coreweave.com\n  login user\n  password {KEY}\n")
    os.chmod(no_netrc, 0o600)
    environ = {"WANDB_BASE_URL": "https://api.forge.coreweave.com"}
    target, notice = resolve_wandb(WandbConfig(mode="online"), environ=environ)
    assert target.mode == "online" and notice is None
    # Nodes where nobody ran `wandb login` get the driver's key through the runtime environment.
    assert worker_env(target, environ=environ) == {**environ, "WANDB_API_KEY": KEY}


def test_wandb_mode_overrides_the_spec_mode(no_netrc):
    target, _ = resolve_wandb(WandbConfig(mode="online"), environ={"WANDB_MODE": "offline", "WANDB_API_KEY": KEY})
    assert target.mode == "offline"
    target, _ = resolve_wandb(WandbConfig(mode="offline"), environ={"WANDB_MODE": "dryrun"})
    assert target.mode == "offline"


def test_an_empty_wandb_mode_is_refused_as_w_and_b_itself_would(no_netrc):
    with pytest.raises(TrackingError, match=r"WANDB_MODE='' is not a W&B mode; valid: online, run, offline"):
        resolve_wandb(WandbConfig(), environ={"WANDB_MODE": ""})


def test_an_unknown_wandb_mode_is_an_input_error_naming_it(tmp_path, tiny_spec, monkeypatch, capsys):
    from cli import main

    monkeypatch.setenv("WANDB_MODE", "sometimes")
    monkeypatch.chdir(tmp_path)
    spec = {**yaml.safe_load(tiny_spec.read_text()), "tracking": {"wandb": {"mode": "offline"}}}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    (tmp_path / "corpora").symlink_to(tiny_spec.parent / "corpora")
    assert main(["run", str(tmp_path / "spec.yaml")]) == 2
    err = capsys.readouterr().err
    assert "WANDB_MODE='sometimes'" in err and "offline" in err
    assert not (tmp_path / "runs").exists()  # refused before anything was written


def _python(script: str, directory: Path, *, env: dict[str, str] | None = None) -> str:
    """Runs `script` (argv[1] = directory) in a fresh process, as W&B keeps its settings process-wide; its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(directory)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


# ------------------------------------------------------------------ a real sweep, read back

CONFIG_KEYS = {"sweep", "number", "lr_fraction", "peak_lr", "mix", "domain_share", "proxy", "base"}


@pytest.mark.slow
def test_each_trial_is_a_proxy_run_grouped_by_sweep_with_its_parameters(wandb_sweep):
    trials = offline_runs(wandb_sweep / "trials")
    assert len(trials) == 4
    for run in trials:
        assert run.job_type == "proxy" and run.group == "wandb_sweep"
        assert CONFIG_KEYS <= set(run.config)
        assert run.name == f"wandb_sweep-{run.config['number']:04d}"
        assert run.config["mix"] in ("4:1", "1:4")
        assert run.config["peak_lr"] == pytest.approx(run.config["lr_fraction"] * 3.0e-3)
        assert run.config["proxy"]["steps"] == 40 and run.config["base"]["model"] == "builtin:tiny-llama"
        assert run.config["base"]["max_lr"] == 3.0e-3
        assert run.config["role"] == "search" and run.config["valid_draw"] == 0  # no replicates or confirmation here
        assert set(run.config["base"]) == {"model", "max_lr", "domain_loss", "general_loss"}  # no sequence losses


@pytest.mark.slow
def test_trial_metrics_are_logged_at_every_evaluation_against_tokens(wandb_sweep):
    for run in offline_runs(wandb_sweep / "trials"):
        assert run.step_metrics == {"*": STEP_METRIC}
        assert run.history_keys == set(Metrics.model_fields)
        tokens = [row["tokens_seen"] for row in run.history]
        assert tokens == sorted(tokens) and len(tokens) == len(set(tokens))


@pytest.mark.slow
def test_every_trial_run_ends_with_its_final_metrics_and_the_status_the_study_recorded(wandb_sweep):
    import pandas as pd

    table = pd.read_parquet(wandb_sweep / "trials.parquet").set_index("number")
    statuses = set()
    for run in offline_runs(wandb_sweep / "trials"):
        row = table.loc[run.config["number"]]
        reason = None if pd.isna(row["reason"]) else row["reason"]  # a completed trial has none
        assert run.summary["status"] == row["status"] and run.summary["reason"] == reason
        final = run.summary["final"]  # the row's figures on its validation text, not the last interim window's
        assert final["text"] == row["text"] and final["domain_gain"] == pytest.approx(row["domain_gain"])
        assert final["forgetting"] == pytest.approx(row["forgetting"])
        assert run.summary["domain_gain"] == pytest.approx(run.history[-1]["domain_gain"])
        if row["status"] == "COMPLETED":  # whether it ended within the budget (0.0 here), beside its role
            assert run.config["within_budget"] == bool(row["forgetting"] <= 0.0)
        assert run.exit_code == 0
        statuses.add(row["status"])
    assert statuses == {"COMPLETED", "PRUNED"}  # both endings are covered


@pytest.mark.slow
def test_the_sweep_run_holds_the_trials_table_pareto_front_and_optimum(wandb_sweep):
    import json

    (run,) = offline_runs(wandb_sweep / "wandb")
    best = json.loads((wandb_sweep / "best.json").read_text())
    assert run.job_type == "sweep" and run.group == "wandb_sweep"
    assert run.summary["best_observed"] == best["best_observed"] and run.summary["verdict"] == best["verdict"]
    assert run.summary["pick_runs"] == [f"wandb_sweep-{number:04d}" for number in best["pick_trials"]]
    assert run.summary["trials"]["_type"] == "table-file" and run.summary["trials"]["nrows"] == 4
    assert run.summary["pareto_front"]["nrows"] == len(best["pareto_front"])
    table = json.loads((run.path / "files" / run.summary["trials"]["path"]).read_text())
    assert "domain_gain" in table["columns"] and len(table["data"]) == 4
    # every figure with the text it was measured on: the search's trials on the pool
    assert {row[table["columns"].index("text")] for row in table["data"]} == {"pool"}
    picked = [row[table["columns"].index("number")] for row in table["data"] if row[table["columns"].index("pick")]]
    assert picked == best["pick_trials"] and {row[table["columns"].index("role")] for row in table["data"]} == {
        "search"
    }


@pytest.mark.slow
def test_the_api_key_is_in_no_file_the_sweep_wrote(wandb_sweep):
    leaked = [path for path in wandb_sweep.rglob("*") if path.is_file() and WANDB_SECRET.encode() in path.read_bytes()]
    assert leaked == []


@pytest.mark.slow
def test_an_unreachable_wandb_server_gives_an_offline_trial_run_not_a_failed_trial(tmp_path):
    script = """
import sys
from pathlib import Path
from sweep.run.tracking import TrialRun, WandbTarget
from train_entry.trial_config import Metrics

metrics = Metrics(step=1, tokens_seen=64, domain_loss=4.0, general_loss=4.0, domain_gain=0.1,
                  forgetting=0.0, train_loss=4.0, lr=1e-3)
with TrialRun(WandbTarget(mode="online", project="p", entity=None), name="t", group="g", config={"lr_fraction": 0.1},
              directory=Path(sys.argv[1])) as tracked:
    tracked.start()
    tracked.log(metrics)
    tracked.end(status="COMPLETED", reason=None)
"""
    env = {
        **os.environ,
        "WANDB_API_KEY": KEY,
        "WANDB_BASE_URL": UNREACHABLE_WANDB,
        "WANDB_INIT_TIMEOUT": "3",
    }
    env.pop("WANDB_MODE", None)
    assert "logging it offline" in _python(script, tmp_path, env=env)
    (run,) = offline_runs(tmp_path)
    assert run.summary["status"] == "COMPLETED" and run.history_keys == set(Metrics.model_fields)


@pytest.mark.slow
def test_an_attempt_that_raises_ends_its_run_failed_with_the_error(tmp_path):
    script = """
import sys
from pathlib import Path
from sweep.run.tracking import TrialRun, WandbTarget

try:
    with TrialRun(WandbTarget(mode="offline", project="p", entity=None), name="t", group="g", config={},
                  directory=Path(sys.argv[1])) as tracked:
        tracked.start()
        raise RuntimeError("out of memory at step 7")
except RuntimeError:
    pass
"""
    _python(script, tmp_path)
    (run,) = offline_runs(tmp_path)
    assert run.summary["status"] == "FAILED" and run.summary["reason"] == "RuntimeError: out of memory at step 7"
    assert run.exit_code == 1


@pytest.mark.slow
def test_trials_on_other_ray_nodes_logged_with_the_key_only_the_driver_had(wandb_sweep):
    # W&B refuses an online run without a key, so a trial that lacked it would have FAILED.
    trials = offline_runs(wandb_sweep / "trials")
    assert len(trials) == 4 and {run.summary["status"] for run in trials} <= {"COMPLETED", "PRUNED"}
    # Each tried online first, at the server URL that, like the key, only the driver's environment had.
    server = UNREACHABLE_WANDB.removeprefix("http://")
    for trial in sorted((wandb_sweep / "trials").iterdir()):
        attempts = [log.read_text(errors="replace") for log in trial.glob("wandb/run-*/logs/debug-internal.log")]
        assert any(server in log for log in attempts), trial


def test_a_rerun_of_a_finished_sweep_resumes_its_sweep_run_and_a_fresh_sweep_gets_another(open_sweep, tmp_path):
    from scripted import BASE, STEPS, scripted

    from sweep.choice.best import best_summary
    from sweep.choice.observed import select
    from sweep.run.sweep_log import log_sweep
    from sweep.study.table import trial_rows
    from sweep.study.trial import run_study_trial

    sweep = open_sweep(sampler="random", pruner={"type": "none"})
    run_study_trial(sweep, sweep.ask().number, scripted([0.1] * len(STEPS), forgetting=0.01), base=BASE)
    rows = trial_rows(sweep)
    summary = best_summary(select(rows, forgetting_budget=0.02, space=sweep.plan.space), rows, sweep.plan)
    target = WandbTarget(mode="offline", project="cpt-sweep-tests", entity=None)

    def log(run_dir: Path, sweep_id: str) -> None:
        log_sweep(
            target, name="lr mix.v2", sweep_id=sweep_id, run_dir=run_dir, rows=rows, summary=summary, plan=sweep.plan
        )

    assert open_sweep(sampler="random", pruner={"type": "none"}).sweep_id == sweep.sweep_id  # kept by a rerun
    log(tmp_path / "first", sweep.sweep_id)
    log(tmp_path / "first", sweep.sweep_id)
    log(tmp_path / "fresh", "0f1e2d3c")  # what --fresh's new study draws
    first = offline_runs(tmp_path / "first")
    assert len(first) == 2 and {run.id for run in first} == {f"lr-mix-v2-{sweep.sweep_id}"}
    (fresh,) = offline_runs(tmp_path / "fresh")
    assert fresh.id == "lr-mix-v2-0f1e2d3c" and fresh.name == "lr mix.v2-sweep"
