"""The rehearsal trainer's checkpoint: what it saves loads with torch.load(weights_only=True), and a
checkpoint on shared storage that holds any other object is refused before that object is built."""

from __future__ import annotations

import os
import pickle

import pytest
import torch

from train_entry.fullrun.toy import STATE_FILE, load_state, save_state
from train_entry.optimizer import OptimizerConfig


class RunsCode:
    """Unpickled by a full torch.load, it would run a shell command."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def trained_one_step() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    """A small model and the trainer's own AdamW after one step, so the optimizer holds real state."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    optimizer = OptimizerConfig(warmup_steps=0).adamw(model, peak_lr=1e-3)
    model(torch.ones(2, 4)).sum().backward()
    optimizer.step()
    return model, optimizer


def test_a_saved_state_loads_under_weights_only(tmp_path):
    model, optimizer = trained_one_step()
    save_state(tmp_path, model=model, optimizer=optimizer, step=5, losses=[(5, 2.5)])
    state = load_state(tmp_path)
    assert (state["step"], state["losses"]) == (5, [(5, 2.5)])
    for name, tensor in model.state_dict().items():
        assert torch.equal(state["model"][name], tensor)
    fresh_model, fresh_optimizer = trained_one_step()
    fresh_model.load_state_dict(state["model"])
    fresh_optimizer.load_state_dict(state["optimizer"])  # the optimizer's groups and moments survive the trip
    assert fresh_optimizer.state_dict()["param_groups"] == optimizer.state_dict()["param_groups"]


def test_a_checkpoint_holding_another_object_is_refused_without_building_it(tmp_path):
    marker = tmp_path / "code-ran"
    torch.save({"model": {}, "step": 1, "losses": [], "extra": RunsCode(str(marker))}, tmp_path / STATE_FILE)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        load_state(tmp_path)
    assert not marker.exists()
