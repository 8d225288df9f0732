"""The Adam state a resume needs before and after megatron-core loads it, on torch's AdamW on CPU.

Without Transformer Engine or Apex, megatron-core's distributed optimizer wraps exactly this
torch.optim.AdamW. The distributed optimizer itself builds only on CUDA (it accepts torch.cuda
tensors only, and DDP allocates its buffers on the current CUDA device): its own save, load and
dp_reshardable copy run in test_optimizer_resume_gpu.py, gpu-marked. Here, the state megatron-core
0.16.1's load leaves behind, as that test's reading of its code describes it.
"""

from __future__ import annotations

import torch

from train_entry.megatron.optimizer_state import create_state, restore_steps


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


def _load_as_megatron_core_0_16_leaves_it(optimizer: torch.optim.Optimizer, saved: torch.optim.Optimizer, params):
    """`saved`'s moments loaded into `optimizer` as DistributedOptimizer.load_state_dict (torch's Adam branch) and
    its dp_reshardable copy leave them: the checkpoint's step count in every param group, and in the state one
    `step` tensor for all parameters holding the load request's count, the fresh optimizer's 1."""
    count = float(saved.state[params[0]]["step"])
    shared = torch.tensor(1.0)
    state = {
        index: {"step": shared, **{key: saved.state[param][key].clone() for key in ("exp_avg", "exp_avg_sq")}}
        for index, param in enumerate(params)
    }
    groups = [{**group, "step": count} for group in optimizer.state_dict()["param_groups"]]
    optimizer.load_state_dict({"state": state, "param_groups": groups})


def test_a_resumed_optimizer_continues_exactly_as_the_uninterrupted_one():
    params, uninterrupted = _adamw()
    for seed in (1, 2, 3):
        _step(params, uninterrupted, seed)
    resumed_params, resumed = _adamw(seed=7)
    left_params, left = _adamw(seed=7)
    for restored, optimizer in ((resumed_params, resumed), (left_params, left)):
        create_state(optimizer)
        _load_as_megatron_core_0_16_leaves_it(optimizer, uninterrupted, params)
        with torch.no_grad():
            for param, saved in zip(restored, params):
                param.copy_(saved)
    restore_steps(resumed)
    assert [float(resumed.state[param]["step"]) for param in resumed_params] == [3.0] * 3
    for seed in (4, 5):
        _step(params, uninterrupted, seed)
        _step(resumed_params, resumed, seed)
        _step(left_params, left, seed)
    assert all(torch.equal(param, expected) for param, expected in zip(resumed_params, params))
    assert [float(resumed.state[param]["step"]) for param in resumed_params] == [5.0] * 3
    # Left as loaded, the count restarts at 1 and its one tensor advances once per parameter: 1 + 2 steps x 3.
    assert {float(left.state[param]["step"]) for param in left_params} == {7.0}
    assert not all(torch.equal(param, expected) for param, expected in zip(left_params, params))
