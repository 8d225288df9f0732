"""`sweep run` for real: Ray Tune, Optuna storage and proxy trials on the tiny spec, in subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pandas as pd
import pytest
import sqlalchemy
import yaml
from optuna.trial import TrialState

from cli import main
from sweep.files.rundir import RunDir

pytestmark = pytest.mark.slow

SWEEP_TIMEOUT_S = 300


def sweep_cli(*args: str, cwd: Path, **popen) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "cli", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,
    )


def run(*args: str, cwd: Path) -> tuple[int, str]:
    process = sweep_cli(*args, cwd=cwd)
    output, _ = process.communicate(timeout=SWEEP_TIMEOUT_S)
    return process.returncode, output


def study_url(run_dir: Path) -> str:
    return f"sqlite:///{RunDir(run_dir).study_db}"


def study_trials(run_dir: Path, name: str) -> list[optuna.trial.FrozenTrial]:
    return optuna.load_study(study_name=name, storage=study_url(run_dir)).get_trials()


def running(trials: list[optuna.trial.FrozenTrial]) -> list[optuna.trial.FrozenTrial]:
    """The trials a sweep has started at a point and not finished."""
    return [t for t in trials if t.state is TrialState.RUNNING and t.params]


def wait_until(run_dir: Path, name: str, ready) -> list[optuna.trial.FrozenTrial]:
    """The trials of a running sweep once `ready(trials)` holds (or the timeout).

    One storage for every look: a storage opened from its URL checks the schema each time (~0.1 s of CPU), which at
    five looks a second took half a core from the sweep under test."""
    deadline = time.monotonic() + SWEEP_TIMEOUT_S
    trials: list[optuna.trial.FrozenTrial] = []
    storage = None
    try:
        while time.monotonic() < deadline and not ready(trials):
            time.sleep(0.2)
            if storage is None and RunDir(run_dir).run_json.is_file() and RunDir(run_dir).study_db.is_file():
                storage = optuna.storages.RDBStorage(study_url(run_dir))
            if storage is not None:
                try:
                    trials = optuna.load_study(study_name=name, storage=storage).get_trials()
                except KeyError:  # the study is not created yet
                    pass
    finally:
        if storage is not None:
            storage.engine.dispose()
    return trials


def freeze_tree(root: int) -> list[int]:
    """SIGSTOP to `root` and every process under it, each stopped before its children are listed, so that none can
    start another unseen; the pids stopped. The trial runs in a Ray worker under the driver's raylet, outside the
    driver's process group, and records its own result in the study."""
    stopped, queue = [], [root]
    while queue:
        pid = queue.pop()
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            continue
        stopped.append(pid)
        queue += children(pid)
    return stopped


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The field after the parenthesised command name: state, then the parent's pid.
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):  # the process ended while we looked
            continue
    return found


def signal_all(pids: list[int], signum: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            continue


def kill_during_a_trial(driver: subprocess.Popen, run_dir: Path, name: str) -> list[optuna.trial.FrozenTrial]:
    """kill -9 of the driver, Ray and the trial while a trial runs; the trials it interrupted.

    A trial lasts about a second, so it may end between the look at the study and the kill. Every process of the
    sweep is frozen before the look: what the study shows running then cannot finish before the kill. Where it
    shows none, the sweep goes on (SIGCONT) to its next trial."""
    while True:
        assert driver.poll() is None, "the sweep ended before a trial could be interrupted"
        wait_until(run_dir, name, lambda trials: bool(running(trials)))
        frozen = freeze_tree(driver.pid)
        try:
            trials = running(study_trials(run_dir, name))
        except (sqlalchemy.exc.OperationalError, optuna.exceptions.StorageInternalError):  # frozen mid-write: locked
            trials = []
        if trials:
            signal_all(frozen, signal.SIGKILL)
            return trials
        signal_all(frozen, signal.SIGCONT)


def finished(trials: list[optuna.trial.FrozenTrial]) -> list[optuna.trial.FrozenTrial]:
    return [t for t in trials if t.state.is_finished()]


def test_sweep_end_to_end_writes_outputs_that_agree_with_the_study(tiny_sweep, tmp_path):
    run_dir = tiny_sweep.run_dir
    trials = study_trials(run_dir, "tiny_sweep")
    assert len(trials) in (5, 6, 7) and all(t.state.is_finished() for t in trials)
    replicate = trials[4]  # of the best point, trained with its own seed
    assert replicate.params == trials[replicate.user_attrs["replicate_of"]].params
    trial_config = json.loads((run_dir / "trials" / "0004" / "trial_config.json").read_text())
    assert replicate.user_attrs["seed"] == trial_config["seed"] == 1
    table = pd.read_parquet(run_dir / "trials.parquet")
    assert list(table["number"]) == [t.number for t in trials]
    assert list(table["seed"]) == [0, 0, 0, 0, 1, 2, 3][: len(trials)]  # confirmation at seeds no trial used
    assert all(table["status"].isin(["COMPLETED", "PRUNED", "DIVERGED", "FAILED"]))
    assert len(pd.read_csv(run_dir / "trials.csv")) == len(trials)
    best = json.loads((run_dir / "best.json").read_text())
    confirmation = best["confirmation"]
    # Trial 5 (and 6, should trial 5 end over the budget) re-ran the pick as it stood before it; never pruned.
    assert [r["trials"] for r in confirmation["rounds"]] == [[n] for n in range(5, len(trials))]
    for round_, trial in zip(confirmation["rounds"], trials[5:]):
        assert trial.user_attrs["confirms"] == round_["round"] and trial.state is TrialState.COMPLETE
        assert trial.params["lr_fraction"] == pytest.approx(round_["lr_fraction"])
    if confirmation["outcome"] == "confirmed":
        assert best["pick"]["point"]["lr_fraction"] == pytest.approx(confirmation["rounds"][-1]["lr_fraction"])
    else:  # nothing feasible to pick in a sweep this short, or every point tried ended over the budget
        assert confirmation["outcome"] == "not_found" and confirmation["reason"]
    assert (run_dir / "best.json").is_file() and (run_dir / "spec.yaml").is_file()
    assert (
        "evidence: best observed trial:" in tiny_sweep.output
        or "no completed trial is within the forgetting budget" in tiny_sweep.output
    )
    # The decision leads: its headline is best.json's verdict, before the evidence.
    headline = best["verdict"][:80]
    assert tiny_sweep.output.index(headline) < tiny_sweep.output.index("evidence: ")

    code, status = run("status", str(run_dir), cwd=tmp_path)
    assert code == 0, status
    assert f"{len(trials)}/" in status and headline in status


def test_trials_the_guard_stopped_are_pruned_in_optuna_with_their_curves(wandb_sweep):
    """The W&B sweep's zero budget and guard margin stop its domain-heavy trials at their first evaluation."""
    trials = study_trials(wandb_sweep, "wandb_sweep")
    pruned = [t for t in trials if t.state is TrialState.PRUNED]
    assert pruned, "no trial was pruned"
    for trial in pruned:
        assert trial.intermediate_values  # recorded in Optuna with its curve
        assert trial.user_attrs["status"] == "PRUNED" and trial.user_attrs["reason"]
    table = pd.read_parquet(wandb_sweep / "trials.parquet").set_index("number")
    assert (table.loc[[t.number for t in pruned], "stopped_step"] < 40).all()


def test_a_sweep_stopped_after_each_of_its_first_trials_resumes_to_every_trial_once_and_fresh_keeps_it(
    write_tiny_spec, tmp_path, capsys
):
    """The driver is stopped once each of its first trials has finished: by Ctrl-C (SIGINT to its process group), by
    SIGTERM to the driver alone (as docker stop and Kubernetes send it) and by kill -9 of the driver, Ray and the
    trial running then. Each rerun resumes the study: the finished trials are kept as they were, the one kill -9
    interrupted re-runs under its number at its point, and the sweep ends with exactly the planned trials, no two
    sharing a point and a seed (a sampler that started its stream over on a rerun drew trial 0 again). Every trial
    diverges within its first steps, before its first evaluation (a divergence factor just over 1, LRs near the
    base's own peak), the cheapest trial there is: each is recorded and the sweep goes on, ending with exit 0, its
    report and no best observed trial, which status and promote handle. But the last trial: a file where it wants
    its output directory makes every attempt of it raise, and it is failed after its one retry (the last, as a
    trial that raises takes its Ray actor down: only the retry starts another). Then --fresh moves the run, its
    study with it, aside."""
    spec = write_tiny_spec(
        "diverge.yaml",
        proxy={"divergence_factor": 1.0001},
        space={"lr_fraction": {"low": 0.9, "high": 1.0}, "mix": ["4:1", "1:1", "1:4"]},
        # Enough that the third stop still finds trials to run: a loaded machine may finish several between polls.
        search={"num_trials": 12, "sampler": "random"},
        execution={"max_retries": 1},
    )
    run_dir = tmp_path / "runs" / "diverge"
    (run_dir / "trials").mkdir(parents=True)
    (run_dir / "trials" / "0011").write_text("in the way")
    for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        before = len(finished(study_trials(run_dir, "diverge"))) if RunDir(run_dir).study_db.is_file() else 0
        driver = sweep_cli("run", str(spec), cwd=tmp_path, start_new_session=True)
        trials = wait_until(run_dir, "diverge", lambda trials, before=before: len(finished(trials)) > before)
        assert driver.poll() is None, "the sweep ended before it could be stopped"
        if stop is signal.SIGKILL:
            interrupted = kill_during_a_trial(driver, run_dir, "diverge")
        elif stop is signal.SIGTERM:
            driver.send_signal(stop)
        else:
            os.killpg(driver.pid, stop)
        output, _ = driver.communicate(timeout=SWEEP_TIMEOUT_S)
        if stop is not signal.SIGKILL:
            assert driver.returncode == 1, output
            assert "planned trial(s) did not finish; run the same command again" in output, output
            assert "Traceback" not in output and "SIGTERM received" not in output, output
    assert [t.number for t in interrupted] == [t.number for t in running(study_trials(run_dir, "diverge"))]

    code, output = run("run", str(spec), cwd=tmp_path)
    assert code == 0, output
    assert "no trial completed its full budget" in output and "Last result" not in output, output
    assert (run_dir / "report" / "index.html").is_file()
    after = {t.number: t for t in study_trials(run_dir, "diverge")}
    failed = after[11]
    assert failed.state is TrialState.FAIL and failed.user_attrs["attempts"] == 2  # the first run and one retry
    assert failed.user_attrs["reason"].startswith(("FileExistsError", "NotADirectoryError"))
    assert len(after) == 12 and all(after[n].state is TrialState.PRUNED for n in range(11)), after
    for earlier in finished(trials):  # kept as they were, not re-run
        assert (after[earlier.number].datetime_complete, after[earlier.number].params) == (
            earlier.datetime_complete,
            earlier.params,
        )
    # Re-run at its own point: the params chosen before the kill kept (a driver frozen between its two suggestions,
    # likelier on a loaded machine, left the mix to choose on the rerun).
    assert all(after[t.number].params.items() >= t.params.items() for t in interrupted), (interrupted, after)
    runs = [(t.params["lr_fraction"], t.params["mix"], t.user_attrs.get("seed", 0)) for t in after.values()]
    assert len(set(runs)) == len(runs), runs
    table = pd.read_parquet(run_dir / "trials.parquet").set_index("number")
    assert sorted(table.index) == sorted(after) and table.loc[11, "status"] == "FAILED"
    diverged = table.drop(index=11)
    assert (diverged["status"] == "DIVERGED").all() and diverged["reason"].str.contains("at step").all()

    capsys.readouterr()
    assert main(["status", str(run_dir)]) == 0 and "12/12 done" in capsys.readouterr().out
    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b"]) == 2
    assert "has no point to promote: no pick (no surrogate: 0 distinct completed point(s)" in capsys.readouterr().err

    first_best = (run_dir / "best.json").read_bytes()
    raw = yaml.safe_load(spec.read_text())
    raw["search"]["num_trials"] = 1  # the new run's own spec: one trial is enough to show it starts anew
    spec.write_text(yaml.safe_dump(raw))
    code, output = run("run", str(spec), "--fresh", cwd=tmp_path)
    assert code == 0, output
    (kept,) = (tmp_path / "runs" / ".trash").iterdir()
    assert kept.name.startswith("diverge-") and (kept / "best.json").read_bytes() == first_best
    assert len(study_trials(kept, "diverge")) == 12  # the old study moved with its run
    assert len(study_trials(run_dir, "diverge")) == 1
