"""Where a full run starts from: its own latest checkpoint, else the base's weights, never a reset."""

from __future__ import annotations

from pathlib import Path

import pytest

from train_entry.megatron.checkpoints import (
    TRACKER,
    CheckpointError,
    StartKind,
    base_checkpoint_dir,
    iteration_dir,
    latest_iteration,
    start_point,
    write_tracker,
)
from train_entry.megatron.config import Checkpoint


def _complete(directory: Path) -> Path:
    """A directory as torch.distributed.checkpoint leaves a finished save (its metadata written last)."""
    directory.mkdir(parents=True)
    (directory / "metadata.json").write_text("{}")
    (directory / "__0_0.distcp").write_bytes(b"\0")
    return directory


def test_a_fresh_run_starts_from_the_base_at_iteration_zero(tmp_path):
    base = _complete(tmp_path / "base")
    start = start_point(Checkpoint(save_dir=str(tmp_path / "run"), save_interval=10, base_dir=str(base)))
    assert (start.kind, start.directory, start.iteration) == (StartKind.BASE, base, 0)


def test_a_run_with_checkpoints_resumes_from_the_latest_and_never_from_the_base(tmp_path):
    run = tmp_path / "run"
    for iteration in (10, 20):
        _complete(iteration_dir(run, iteration))
        write_tracker(run, iteration)
    _complete(iteration_dir(run, 30))  # written but never named: the save was cut short
    start = start_point(Checkpoint(save_dir=str(run), save_interval=10, base_dir=str(_complete(tmp_path / "base"))))
    assert (start.kind, start.directory, start.iteration) == (StartKind.RESUME, run / "iter_0000020", 20)
    assert sorted(path.name for path in run.iterdir()) == ["iter_0000010", "iter_0000020", "iter_0000030", TRACKER]


def test_without_a_base_a_fresh_run_starts_from_scratch(tmp_path):
    start = start_point(Checkpoint(save_dir=str(tmp_path / "run"), save_interval=10))
    assert (start.kind, start.directory, start.iteration) == (StartKind.SCRATCH, None, 0)


def test_base_dir_may_be_a_checkpoint_root_with_a_tracker_or_a_release(tmp_path):
    converted = tmp_path / "converted"
    _complete(iteration_dir(converted, 0))
    write_tracker(converted, 0)
    assert base_checkpoint_dir(converted) == converted / "iter_0000000"
    release = tmp_path / "release-root"
    _complete(release / "release")
    (release / TRACKER).write_text("release\n")
    assert base_checkpoint_dir(release) == release / "release"


@pytest.mark.parametrize(
    ("tracker", "message"),
    [("twenty", "expected an iteration number, got 'twenty'"), ("-3", "got -3"), ("40", "no metadata.json")],
)
def test_a_tracker_that_names_no_complete_checkpoint_is_an_error(tmp_path, tracker, message):
    run = tmp_path / "run"
    run.mkdir()
    (run / TRACKER).write_text(tracker)
    with pytest.raises(CheckpointError, match=message):
        latest_iteration(run)


def test_a_base_dir_that_is_no_checkpoint_is_an_error_naming_it(tmp_path):
    (tmp_path / "hf-model").mkdir()
    (tmp_path / "hf-model" / "model.safetensors").write_bytes(b"")
    with pytest.raises(
        CheckpointError, match=r"checkpoint.base_dir '.*hf-model' is not a Megatron distributed checkpoint"
    ):
        start_point(Checkpoint(save_dir=str(tmp_path / "run"), save_interval=1, base_dir=str(tmp_path / "hf-model")))


def test_the_tracker_is_replaced_whole(tmp_path):
    for iteration in (5, 10):
        _complete(iteration_dir(tmp_path, iteration))
        write_tracker(tmp_path, iteration)
    assert (tmp_path / TRACKER).read_text() == "10\n"
    assert latest_iteration(tmp_path) == 10
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []
