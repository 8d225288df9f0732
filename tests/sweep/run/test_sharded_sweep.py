"""`sweep run` of a spec whose trial takes two workers: each Tune trial drives a Ray Train job of two gloo workers on
CPU, whose sharded trial measures what the one-process trial of the same config does, reports to the study from
rank 0, and leaves no checkpoint behind but its workers' logs and the Tune trial's output; the sweep's lines and
`sweep status` count trials, not workers."""

from __future__ import annotations

import subprocess
import sys

import optuna
import pytest

from cli import main
from train_entry.file_format import TRIAL_CONFIG, TRIAL_RESULT
from train_entry.proxy import run_trial
from train_entry.trial_config import TRIAL_CONFIG_JSON, TrialConfig, TrialResult

pytestmark = pytest.mark.slow

TOLERANCE = 1e-5
"""As tests/train_entry/sharded/test_trial.py: two gloo workers against one process, float32 on CPU."""


def test_a_sweep_of_two_worker_trials_runs_each_as_a_sharded_job_that_measures_what_one_process_does(
    write_tiny_spec, tmp_path, capsys
):
    spec = write_tiny_spec(
        "sharded.yaml",
        search={"num_trials": 1, "replicates": {"top": 0}},  # a Ray Train job takes ~30 s to start on 2 cores
        execution={"concurrency": 1, "cpus": 1, "workers": 2},
    )
    done = subprocess.run([sys.executable, "-m", "cli", "run", str(spec)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    output = done.stdout
    assert "trials: 1 at once, each a Ray Train job of 2 CPU workers (gloo), its model sharded with FSDP2" in output
    assert "1/1 done" in output

    run_dir = tmp_path / "runs" / "sharded"
    trials = optuna.load_study(study_name="sharded", storage=f"sqlite:///{run_dir / 'optuna.db'}").get_trials()
    assert len(trials) == 1 and trials[0].state.is_finished()
    folder = run_dir / "trials" / "0000"
    assert not (folder / "checkpoint").exists()  # 12 bytes a parameter: gone once the trial ends
    assert "worker 1 ended: completed at step 40" in (folder / "worker_1.log").read_text()
    # The Tune trial's own output, which Tune leaves in Ray's session folder unless told to copy it.
    assert sorted(path.name for path in (run_dir / "tune").glob("proxy_trainable_*/std*")) == ["stderr", "stdout"]
    sharded = TRIAL_RESULT.read(folder / "result.json", TrialResult)
    assert [m.step for m in sharded.history] == sorted(int(step) for step in trials[0].intermediate_values)

    config = TRIAL_CONFIG.read(folder / TRIAL_CONFIG_JSON, TrialConfig)
    one = run_trial(config.model_copy(update={"output_dir": str(tmp_path / "one")}), lambda metrics: False)
    assert sharded.tokens_seen == one.history[len(sharded.history) - 1].tokens_seen
    for ours, theirs in zip(sharded.history, one.history):
        assert ours.domain_loss == pytest.approx(theirs.domain_loss, rel=TOLERANCE)
        assert ours.general_loss == pytest.approx(theirs.general_loss, rel=TOLERANCE)

    assert main(["status", str(run_dir)]) == 0
    assert "1/1 done" in capsys.readouterr().out
