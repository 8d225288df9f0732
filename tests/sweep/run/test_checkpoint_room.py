"""Room for sharded trials' checkpoints: an 8B trial's checkpoint is 12 bytes per parameter, two while the next is
written, times the trials at once; short of room the sweep warns with the figures, and one-process trials and
trials that checkpoint before no step but their last need none."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.run.checkpoint_room import checkpoint_room, checkpoints_held, sweep_checkpoint_room
from sweep.spec.spec import load_spec
from tests.sweep.spec.test_trial_memory import LLAMA_3_1_8B

GB = 10**9


@pytest.mark.parametrize(("interval", "held"), [(25, 2), (50, 1), (99, 1), (100, 0), (200, 0)])
def test_a_trial_holds_two_checkpoints_at_its_peak_and_none_when_only_its_last_step_is_due(interval, held):
    assert checkpoints_held(steps=100, interval=interval) == held  # the last step ends the trial, unsaved


def test_two_8b_trials_checkpointing_every_evaluation_need_four_checkpoints_of_room():
    def room(free_gb: float, interval: int = 25) -> str | None:
        return checkpoint_room(LLAMA_3_1_8B, steps=100, interval=interval, at_once=2, free_bytes=int(free_gb * GB),
                               where=Path("/scratch/runs/cpt"))  # fmt: skip

    assert room(386) is None
    assert room(385) == (
        "a sharded trial keeps a checkpoint of 96.4 GB (12 bytes per parameter), two while it writes the next: "
        "2 trial(s) at once need 385.5 GB and /scratch/runs/cpt has 385.0 GB free; free some, run fewer trials at "
        "once (execution.concurrency), or checkpoint less often (execution.checkpoint_interval; from proxy.steps up none "
        "is written, and a lost worker restarts its trial)"
    )
    assert "one: 2 trial(s) at once need 192.7 GB" in room(100, interval=50)
    assert room(0, interval=100) is None


def test_only_sharded_trials_are_counted(write_tiny_spec, tmp_path):
    one_process = load_spec(write_tiny_spec("one.yaml"))
    sharded = load_spec(write_tiny_spec("sharded.yaml", execution={"workers": 2}))
    assert sweep_checkpoint_room(sharded, tmp_path, at_once=1) is None  # the tiny model's checkpoint: ~2 MB
    # A billion of them at once would fill any disk: the sharded spec is counted, the one-process one is not.
    assert "a sharded trial keeps a checkpoint of 1.5 MB" in sweep_checkpoint_room(sharded, tmp_path, at_once=10**9)
    assert sweep_checkpoint_room(one_process, tmp_path, at_once=10**9) is None
