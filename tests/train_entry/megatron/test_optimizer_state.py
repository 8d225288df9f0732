"""The Adam state a resume needs before and after megatron-core loads it, on torch's AdamW on CPU.

Without Transformer Engine or Apex, megatron-core's distributed optimizer wraps exactly this
torch.optim.AdamW (it builds only on CUDA; its save and load run in the gpu-marked full-run test).
"""

from __future__ import annotations

import torch

from train_entry.megatron.optimizer_state import create_state, untie_steps


def _adamw(seed: int = 0) -> tuple[list[torch.nn.Parameter], torch.optim.AdamW]:
    generator = torch.Generator().manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(shape, generator=generator)) for shape in ((4, 3), (3,), (2, 2))]
    return params, torch.optim.AdamW(params, lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)


def _step(params: list[torch.nn.Parameter], optimizer: torch.optim.Optimizer, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    for param in params:
        param.grad = torch.randn(param.shape, generator=generator)
    optimizer.step()


def test_a_fresh_optimizer_gets_one_step_count_for_all_parameters_and_keeps_its_weights():
    params, optimizer = _adamw()
    before = [param.detach().clone() for param in params]
    assert not optimizer.state  # what megatron-core's load request could not be built from
    create_state(optimizer)
    # DistributedOptimizer.state_dict asserts exactly one step value over all parameters.
    assert {float(optimizer.state[param]["step"]) for param in params} == {1.0}
    assert all({"exp_avg", "exp_avg_sq"} <= optimizer.state[param].keys() for param in params)
    assert all(torch.equal(param, old) for param, old in zip(params, before))
    assert optimizer.param_groups[0]["lr"] == 3e-3 and all(param.grad is None for param in params)


def test_an_optimizer_that_has_stepped_keeps_its_state():
    params, optimizer = _adamw()
    _step(params, optimizer, seed=1)
    steps = [optimizer.state[param]["step"] for param in params]
    create_state(optimizer)
    assert [optimizer.state[param]["step"] for param in params] == steps == [1.0] * 3


def _load_as_megatron_core_does(optimizer: torch.optim.Optimizer, saved: torch.optim.Optimizer, params) -> None:
    """Load `saved`'s moments into `optimizer` with one `step` tensor for all parameters, as
    DistributedOptimizer.load_state_dict hands them to torch (its non-Apex/TE branch)."""
    shared = torch.tensor(float(saved.state[params[0]]["step"]))
    state = {
        index: {"step": shared, **{key: saved.state[param][key].clone() for key in ("exp_avg", "exp_avg_sq")}}
        for index, param in enumerate(params)
    }
    optimizer.load_state_dict({"state": state, "param_groups": optimizer.state_dict()["param_groups"]})


def test_a_resumed_optimizer_continues_exactly_as_the_uninterrupted_one():
    params, uninterrupted = _adamw()
    for seed in (1, 2, 3):
        _step(params, uninterrupted, seed)
    resumed_params, resumed = _adamw(seed=7)
    tied_params, tied = _adamw(seed=7)
    for restored, optimizer in ((resumed_params, resumed), (tied_params, tied)):
        create_state(optimizer)
        _load_as_megatron_core_does(optimizer, uninterrupted, params)
        with torch.no_grad():
            for param, saved in zip(restored, params):
                param.copy_(saved)
    untie_steps(resumed)
    for seed in (4, 5):
        _step(params, uninterrupted, seed)
        _step(resumed_params, resumed, seed)
        _step(tied_params, tied, seed)
    assert all(torch.equal(param, expected) for param, expected in zip(resumed_params, params))
    assert [float(resumed.state[param]["step"]) for param in resumed_params] == [5.0] * 3
    # Left shared, the one tensor advances once per parameter: 3 + 2 steps x 3 parameters.
    assert {float(tied.state[param]["step"]) for param in tied_params} == {9.0}
