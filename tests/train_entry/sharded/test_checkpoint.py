"""A sharded trial's checkpoint, in one process (a group of one): what is saved loads back whole; a save that did
not finish, a checkpoint of another config and a torn progress.json are passed over; a planted .metadata that names
anything but DCP's own classes is refused before it is built."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
import torch
from torch.distributed.checkpoint.api import CheckpointException

from train_entry.file_format import FORMAT_KEY
from train_entry.group import Group
from train_entry.optimizer import OptimizerConfig
from train_entry.sharded.checkpoint import (
    CHECKPOINT_DIR,
    PROGRESS_JSON,
    CheckpointMismatch,
    SavedProgress,
    config_digest,
    remove_checkpoints,
    resume,
    save_checkpoint,
)
from train_entry.text_losses import SideLosses, TextLosses
from train_entry.trial_config import BaseLosses, CorpusPrefixes, Metrics, ProxyConfig, TrialConfig

GROUP = Group.single()


class RunsCode:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def trial_config(output_dir: Path, **changes) -> TrialConfig:
    prefixes = CorpusPrefixes(general="g", domain="d")
    return TrialConfig(
        lr_fraction=0.1,
        mix="1:1",
        base_dir="base",
        tokenizer_dir="tokenizer",
        max_lr=3e-3,
        base_losses=BaseLosses(domain_loss=5.0, general_loss=4.0),
        final_base_losses=BaseLosses(domain_loss=5.0, general_loss=4.0),
        train=prefixes,
        valid=prefixes,
        proxy=ProxyConfig(steps=40, seq_len=16, batch_size=4, eval_interval=10, warmup_steps=2),
        output_dir=str(output_dir),
        seed=0,
        **changes,
    )


def trained(steps: int) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    optimizer = OptimizerConfig(warmup_steps=0).adamw(model, peak_lr=1e-2)
    for _ in range(steps):
        model(torch.ones(2, 4)).square().sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    return model, optimizer


def saved_at(config: TrialConfig, steps: int) -> SavedProgress:
    metrics = Metrics.measure(
        base=config.base_losses,
        domain_loss=4.5,
        general_loss=4.1,
        step=steps,
        tokens_seen=64 * steps,
        train_loss=4.7,
        lr=1e-3,
    )
    return SavedProgress(
        config_digest=config_digest(config),
        steps_done=steps,
        first_loss=5.0,
        wall_seconds=1.5,
        history=[metrics],
        documents=[TextLosses(domain=one_document(4.5), general=one_document(4.1))],
    )


def one_document(loss: float) -> SideLosses:
    return SideLosses(losses=[loss], tokens=[16], weights=[1.0])


def test_a_saved_checkpoint_resumes_weights_adam_state_and_history(tmp_path):
    config = trial_config(tmp_path)
    model, optimizer = trained(10)
    save_checkpoint(tmp_path, model, optimizer, saved_at(config, 10), GROUP)
    model, optimizer = trained(20)
    save_checkpoint(tmp_path, model, optimizer, saved_at(config, 20), GROUP)
    assert [path.name for path in (tmp_path / CHECKPOINT_DIR).iterdir()] == ["step_0000020"]  # only the newest

    fresh, fresh_optimizer = trained(0)
    saved = resume(config, fresh, fresh_optimizer, GROUP)

    assert saved == saved_at(config, 20)
    for name, tensor in model.state_dict().items():
        assert torch.equal(fresh.state_dict()[name], tensor)
    ours, theirs = fresh_optimizer.state_dict()["state"], optimizer.state_dict()["state"]
    assert ours.keys() == theirs.keys()
    for key in ours:
        assert float(ours[key]["step"]) == float(theirs[key]["step"]) == 20  # Adam's bias correction goes on from 20
        assert torch.equal(ours[key]["exp_avg_sq"], theirs[key]["exp_avg_sq"])

    remove_checkpoints(tmp_path, GROUP)
    assert not (tmp_path / CHECKPOINT_DIR).exists()


def test_an_unfinished_save_a_torn_record_and_another_configs_checkpoint_are_passed_over(tmp_path, capsys):
    config = trial_config(tmp_path)
    path = save_checkpoint(tmp_path, *trained(10), saved_at(config, 10), GROUP)
    (path / PROGRESS_JSON).unlink()  # killed between its shards and its record
    assert resume(config, *trained(0), GROUP) is None

    other = trial_config(tmp_path, threads=2)
    save_checkpoint(tmp_path, *trained(20), saved_at(other, 20), GROUP)
    assert resume(config, *trained(0), GROUP) is None
    assert resume(other, *trained(0), GROUP) is not None

    record = tmp_path / CHECKPOINT_DIR / "step_0000020" / PROGRESS_JSON
    written = json.loads(record.read_text())
    record.write_text(json.dumps(written | {FORMAT_KEY: written[FORMAT_KEY] + 1}))
    assert resume(other, *trained(0), GROUP) is None
    assert (
        f"{PROGRESS_JSON} is unreadable ({record}: checkpoint progress record format {written[FORMAT_KEY] + 1}"
        in capsys.readouterr().err
    )

    record.write_text('{"format_version": 1, "steps_do')
    assert resume(other, *trained(0), GROUP) is None
    assert f"{PROGRESS_JSON} is unreadable" in capsys.readouterr().err


def test_a_progress_record_edited_past_its_checkpoints_step_is_passed_over(tmp_path, capsys):
    """Edited from 20 to 55 steps done, it was trusted: the trial skipped 35 steps and ended COMPLETED with other
    metrics (gain 0.0953 against 0.1188 untouched)."""
    config = trial_config(tmp_path)
    path = save_checkpoint(tmp_path, *trained(20), saved_at(config, 20), GROUP)
    record = path / PROGRESS_JSON
    record.write_text(json.dumps(json.loads(record.read_text()) | {"steps_done": 55}))

    assert resume(config, *trained(0), GROUP) is None

    said = f"checkpoint {path} is not resumed from: its {PROGRESS_JSON} says 55 steps done, where the checkpoint was"
    assert f"{said} saved at step 20" in capsys.readouterr().err


def test_a_progress_record_edited_with_its_folders_name_is_refused_by_the_optimizers_own_step_count(tmp_path):
    config = trial_config(tmp_path)
    path = save_checkpoint(tmp_path, *trained(20), saved_at(config, 20), GROUP)
    record = path / PROGRESS_JSON
    record.write_text(json.dumps(json.loads(record.read_text()) | {"steps_done": 55}))
    moved = path.rename(path.with_name("step_0000055"))

    with pytest.raises(CheckpointMismatch) as raised:
        resume(config, *trained(0), GROUP)

    assert str(raised.value) == (
        f"{moved / PROGRESS_JSON}: steps_done is 55, but the optimizer state saved beside it has taken 20 step(s): "
        f"the record is not this checkpoint's; remove {moved} to run the trial from its start"
    )


def test_a_planted_metadata_pickle_is_refused_before_it_is_built(tmp_path):
    config = trial_config(tmp_path)
    model, optimizer = trained(1)
    path = save_checkpoint(tmp_path, model, optimizer, saved_at(config, 10), GROUP)
    marker = tmp_path / "code-ran"
    (path / ".metadata").write_bytes(pickle.dumps(RunsCode(str(marker))))

    # DCP's load wraps what the reader raised in its CheckpointException, message and all.
    with pytest.raises(CheckpointException, match=r"\.metadata names posix\.system, which DCP metadata never holds"):
        resume(config, *trained(0), GROUP)
    assert not marker.exists()


def test_checkpoints_follow_evaluations():
    with pytest.raises(ValueError, match=r"checkpoint_interval must be a multiple of proxy.eval_interval.*interval=15"):
        trial_config(Path("out"), checkpoint_interval=15)
    assert trial_config(Path("out")).checkpoint_steps == 10
    assert trial_config(Path("out"), checkpoint_interval=20).checkpoint_steps == 20
