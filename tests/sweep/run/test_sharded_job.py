"""A sharded trial as a Ray Train job of two CPU workers (gloo) on a local Ray, driven the way a Tune trial drives it:
rank 0's reports answered here, a worker killed with SIGKILL mid-trial restarted by Ray Train and resumed from the
trial's checkpoint with no step trained twice, each worker's output in its log in the trial's folder, a report that
stops the trial stopping every worker, and workers that fail told in one line."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
import ray

from sweep.run.prepare import prepare
from sweep.run.sharded_job import NotShared, ShardedTrialError, check_shared, clear_for_retry, run_sharded_job
from sweep.spec.spec import load_spec
from sweep.spec.trial_scale import Workers
from train_entry.mix import MixRatio
from train_entry.proxy import run_trial
from train_entry.sharded.checkpoint import CHECKPOINT_DIR
from train_entry.trial_config import Metrics, TrialConfig, TrialStatus

TOLERANCE = 1e-5
"""As tests/train_entry/sharded/test_trial.py: two gloo workers against one process, float32 on CPU."""
TWO_CPU_WORKERS = Workers(count=2, gpus=False, cpus=1, max_failures=1)


@pytest.fixture(scope="module")
def config(tiny_spec_path, tmp_path_factory) -> TrialConfig:
    prepared = prepare(load_spec(tiny_spec_path))
    config = prepared.trial_config(lr_fraction=0.1, mix=MixRatio(1, 1), output_dir=tmp_path_factory.mktemp("one"))
    return config.model_copy(update={"proxy": config.proxy.model_copy(update={"eval_interval": 10})})


@pytest.fixture(scope="module")
def local_ray():
    # Two workers and their queues; the driver (this process) takes none.
    ray.init(address="local", num_cpus=2, include_dashboard=False, configure_logging=False, log_to_driver=False)
    yield
    ray.shutdown()


def train_workers() -> list[int]:
    """The process ids of this Ray's Ray Train workers: this process's descendants named after RayTrainWorker."""
    children: dict[int, list[int]] = {}
    titles: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            titles[int(entry.name)] = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, stack = [], [os.getpid()]
    while stack:
        for child in children.get(stack.pop(), []):
            stack.append(child)
            if "RayTrainWorker" in titles.get(child, ""):
                found.append(child)
    return found


class Answers:
    """The Tune trial's side, scripted: records each report, kills a worker at the first report of step `kill_at`
    and stops the trial at the report after it."""

    def __init__(self, *, kill_at: int) -> None:
        self.kill_at = kill_at
        self.steps: list[int] = []
        self.killed: list[int] = []

    def __call__(self, metrics: Metrics) -> bool:
        self.steps.append(metrics.step)
        if self.killed:
            return True
        if metrics.step == self.kill_at:
            self.killed = train_workers()[:1]
            os.kill(self.killed[0], signal.SIGKILL)
        return False


@pytest.mark.slow
def test_a_worker_killed_mid_trial_resumes_from_the_checkpoint_and_a_report_that_stops_the_trial_stops_every_worker(
    config, local_ray, tmp_path
):
    """One job for both (each Ray Train job costs ~60 s of CPU on 2 cores): the kill, then the stop."""
    one = run_trial(config, lambda metrics: False)
    answers = Answers(kill_at=30)

    result = run_sharded_job(config.model_copy(update={"output_dir": str(tmp_path)}), answers, TWO_CPU_WORKERS)

    assert answers.killed, "no Ray Train worker was found to kill"
    # Killed at step 30's report, before its checkpoint: the restarted group resumed from step 20's and reported
    # step 30 again (the study keeps the first of two reports of a step), which stopped the trial.
    assert answers.steps == [10, 20, 30, 30]
    assert [m.step for m in result.history] == [10, 20, 30]
    for ours, theirs in zip(result.history, one.history, strict=False):
        assert ours.tokens_seen == theirs.tokens_seen  # no step trained twice
        assert ours.domain_loss == pytest.approx(theirs.domain_loss, rel=TOLERANCE)
        assert ours.general_loss == pytest.approx(theirs.general_loss, rel=TOLERANCE)
        assert ours.train_loss == pytest.approx(theirs.train_loss, rel=TOLERANCE)
    # Every worker called Ray Train's closing report (a barrier): none trained on past step 30.
    assert result.status is TrialStatus.STOPPED and result.steps == 30 == result.history[-1].step
    assert result.tokens_seen == result.history[-1].tokens_seen
    assert not train_workers()  # the job's workers are gone with it
    assert not (tmp_path / CHECKPOINT_DIR).exists()  # the trial ended: nothing left to resume
    assert not list(tmp_path.glob(".shared-*"))  # nor the file each worker looked for
    # Each worker's log holds both attempts; rank 0's says where the second resumed from.
    logs = {rank: (tmp_path / f"worker_{rank}.log").read_text() for rank in (0, 1)}
    assert [log.count(f"worker {rank} of 2 started on ") for rank, log in logs.items()] == [2, 2]
    assert f"resumed from {tmp_path / CHECKPOINT_DIR / 'step_0000020'}: 20 of 40 steps done" in logs[0]
    assert "saved " in logs[0] and "resumed from" not in logs[1]
    assert all(log.count(" ended: stopped at step 30") == 1 for log in logs.values())


@pytest.mark.slow
def test_a_trial_whose_workers_fail_says_in_one_line_what_they_raised_and_where_their_output_is(
    config, local_ray, tmp_path
):
    missing = tmp_path / "no-base"
    broken = config.model_copy(update={"output_dir": str(tmp_path), "base_dir": str(missing)})
    no_restart = Workers(count=2, gpus=False, cpus=1, max_failures=0)
    with pytest.raises(ShardedTrialError) as failed:
        run_sharded_job(broken, lambda metrics: False, no_restart)
    # Ray's own message is every worker's traceback, cut short. Ray Train stops the group at the first failure it
    # polls: both ranks when they raise together, one alone when the other raises a moment later (a loaded machine).
    ranks = re.fullmatch(
        rf"rank (0, 1|0|1): HfDirError: {re.escape(str(missing))} is not a Hugging Face model directory "
        rf"\(no config\.json\) \(each worker's output: {re.escape(str(tmp_path))}/worker_<rank>\.log\)",
        str(failed.value),
    )
    assert ranks, str(failed.value)
    for rank in ranks.group(1).split(", "):  # each rank named has the error in its log, with its traceback
        assert f"HfDirError: {missing}" in (tmp_path / f"worker_{rank}.log").read_text()


def test_a_worker_whose_node_does_not_share_the_trials_folder_is_stopped_naming_it(tmp_path):
    """What a worker on a node without the run directory's file system sees: a folder without the Tune trial's file
    (every job in this module passes the check: they share this machine's disk)."""
    marker = tmp_path / ".shared-0123"
    with pytest.raises(NotShared, match=rf"^{tmp_path} on \S+ is not the trial's folder the Tune trial wrote into: "):
        check_shared(marker)
    marker.touch()
    check_shared(marker)


def test_a_retried_trial_keeps_only_the_checkpoint_it_resumes_from(tmp_path):
    trial, elsewhere = tmp_path / "trial", tmp_path / "elsewhere"
    saved = trial / "checkpoint" / "step_0000020"
    saved.mkdir(parents=True)
    (saved / "progress.json").write_text("{}")
    for folder in ("megatron_index", "ray_train", "wandb"):
        (trial / folder).mkdir()
        (trial / folder / "half-written").write_bytes(b"\0")
    (trial / "result.json").write_text("{}")
    (trial / "worker_0.log").write_text("the first attempt's output\n")
    (trial / "worker_x.log").write_text("not a worker's log\n")
    (trial / ".shared-0123").touch()  # a crashed job's
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("not the trial's")
    (trial / "linked").symlink_to(elsewhere)

    clear_for_retry(trial)

    assert sorted(path.name for path in trial.iterdir()) == ["checkpoint", "worker_0.log"]
    assert (saved / "progress.json").is_file() and (elsewhere / "keep").is_file()  # a link is removed, not followed
    clear_for_retry(tmp_path / "never-started")  # a first attempt has no folder yet
