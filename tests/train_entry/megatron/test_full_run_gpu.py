"""The full run on one GPU: a tiny Llama trained 30 iterations, killed after its checkpoints at 10 and 20, resumed.

Skipped without CUDA (this is the only path megatron-core's model runs on). One process, an NCCL
group of one, the same train() torchrun and Ray Train workers call.
"""

from __future__ import annotations

import socket

import pytest

from train_entry.megatron.checkpoints import StartKind, iteration_dir, latest_iteration
from train_entry.megatron.config import FullRunConfig
from train_entry.megatron.train import StepMetrics, train

pytestmark = pytest.mark.gpu


class _Killed(Exception):
    """Stands for the process dying right after a checkpoint."""


@pytest.fixture
def single_gpu_job(monkeypatch):
    """new_job(): torchrun's environment for a job of one process, on a port no earlier job held."""

    def new_job() -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        environment = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": "0", "WORLD_SIZE": "1"}
        for name, value in {**environment, "LOCAL_RANK": "0"}.items():
            monkeypatch.setenv(name, value)

    return new_job


def _tiny(blend_data, tmp_path, *, train_iters: int = 20, **checkpoint) -> FullRunConfig:
    return FullRunConfig.model_validate(
        {
            "model": {
                "num_layers": 2,
                "hidden_size": 128,
                "ffn_hidden_size": 352,
                "num_attention_heads": 4,
                "num_query_groups": 2,
                "vocab_size": 512,
                "seq_length": 64,
            },
            "parallelism": {"global_batch_size": 16, "micro_batch_size": 4},
            "optimization": {"lr": 3e-3, "min_lr": 3e-4, "warmup_iters": 2, "train_iters": train_iters},
            "data": blend_data({"general": 0.5, "domain": 0.5}, cache_dir=tmp_path / "index-cache", valid=True),
            "checkpoint": {"save_dir": str(tmp_path / "run"), "save_interval": 10, **checkpoint},
            "log_interval": 5,
            "eval_interval": 10,
            "eval_iters": 2,
        }
    )


def test_resumes_after_two_kills_in_a_row_and_follows_the_uninterrupted_run(single_gpu_job, blend_data, tmp_path):
    uninterrupted: list[StepMetrics] = []
    single_gpu_job()
    train(_tiny(blend_data, tmp_path / "uninterrupted", train_iters=30), on_log=uninterrupted.append)

    config = _tiny(blend_data, tmp_path / "killed", train_iters=30)
    run = tmp_path / "killed" / "run"
    logged: list[StepMetrics] = []

    def die_after_its_first_checkpoint(iteration, directory):
        raise _Killed(iteration)

    for killed_at in (10, 20):
        single_gpu_job()
        with pytest.raises(_Killed):
            train(config, on_log=logged.append, on_checkpoint=die_after_its_first_checkpoint)
        assert latest_iteration(run) == killed_at
    single_gpu_job()
    result = train(config, on_log=logged.append)
    assert (result.start, result.start_iteration, result.iteration) == (StartKind.RESUME, 20, 30)
    assert result.checkpoints == [str(iteration_dir(run, 30))]
    # Adam's bias correction counted every step through both resumes (megatron-core's load alone restarts it at 1).
    assert result.adam_step == 30
    assert [m.iteration for m in logged] == [m.iteration for m in uninterrupted] == [5, 10, 15, 20, 25, 30]
    # The schedule went on where it stopped (it ends at min_lr), and with the same samples, weights and
    # Adam state the losses are the uninterrupted run's, up to the GPU's nondeterministic reductions.
    assert logged[-1].lr == pytest.approx(3e-4)
    for resumed, expected in zip(logged, uninterrupted, strict=True):
        assert resumed.lr == pytest.approx(expected.lr, rel=1e-9), resumed.iteration
        assert resumed.train_loss == pytest.approx(expected.train_loss, rel=2e-3), resumed.iteration
        assert (resumed.valid_losses is None) == (expected.valid_losses is None), resumed.iteration
        if expected.valid_losses is not None:
            assert resumed.valid_losses == pytest.approx(expected.valid_losses, rel=2e-3), resumed.iteration
    assert logged[-1].train_loss < logged[0].train_loss


class _Recording:
    """An evaluator (the job's watch stands here) that keeps what it is given and stops the run at `stop_at`."""

    def __init__(self, stop_at: int | None = None, state: dict | None = None) -> None:
        self.stop_at, self.given, self.restored = stop_at, [], state

    def evaluate(self, step: int, losses: list[float]) -> bool:
        self.given.append((step, losses))
        return step == self.stop_at

    def state(self) -> dict:
        return {"base": self.given[0][1] if self.given and self.given[0][0] == 0 else None}

    def restore(self, state: dict) -> None:
        self.restored = state


def test_evaluates_each_set_apart_from_the_base_on_and_stops_when_its_evaluator_asks(
    single_gpu_job, blend_data, tmp_path
):
    config = _tiny(blend_data, tmp_path, train_iters=30)
    evaluator = _Recording(stop_at=20)
    single_gpu_job()
    result = train(config, evaluator=evaluator)
    assert [step for step, _ in evaluator.given] == [0, 10, 20]
    assert all(len(losses) == 2 for _, losses in evaluator.given)  # general and domain, each its own loss
    assert evaluator.given[0][1][0] != evaluator.given[0][1][1]
    assert (result.stopped, result.iteration) == (True, 20)
    assert latest_iteration(tmp_path / "run") == 20  # checkpointed before it stopped
    # The resumed run gets back the base's losses its evaluator kept, and evaluates no new base.
    resumed = _Recording()
    single_gpu_job()
    result = train(config, evaluator=resumed)
    assert resumed.restored == {"base": evaluator.given[0][1]}
    assert [step for step, _ in resumed.given] == [30] and not result.stopped


def test_starts_from_a_base_with_its_weights_and_a_fresh_schedule(single_gpu_job, blend_data, tmp_path):
    single_gpu_job()
    trained = train(_tiny(blend_data, tmp_path / "base-run"))
    scratch: list[StepMetrics] = []
    continued: list[StepMetrics] = []
    first_iteration = {"optimization": {"lr": 3e-3, "min_lr": 3e-4, "warmup_iters": 2, "train_iters": 3}}
    for base, logged in ((None, scratch), (trained.checkpoints[-1], continued)):
        data = _tiny(blend_data, tmp_path / f"from-{base is not None}", base_dir=base).model_dump()
        config = FullRunConfig.model_validate({**data, **first_iteration, "log_interval": 1, "eval_interval": None})
        single_gpu_job()
        result = train(config, on_log=logged.append)
        assert result.start_iteration == 0 and result.iteration == 3
    assert result.start is StartKind.BASE
    # Iteration 1 runs at LR 0 (warmup starts there): its loss is the starting weights' loss. Both runs
    # initialise the same random weights from the same seed, so only a loaded base can lower it.
    assert continued[0].train_loss < scratch[0].train_loss - 0.2
    assert continued[0].lr == scratch[0].lr


FAMILY_FEATURES = {
    # Qwen 2.5's QKV bias and tied embeddings; Qwen 3's QK-norm over heads wider than hidden / heads; an MoE model's
    # experts and router (megatron-core's MoE layer, the all-to-all dispatcher, fp32 routing).
    "qwen2.5": {"add_qkv_bias": True, "untie_embeddings_and_output_weights": False},
    "qwen3": {"qk_layernorm": True, "kv_channels": 64},
    "moe": {"moe": {"num_experts": 4, "router_topk": 2, "expert_ffn_hidden_size": 176, "aux_loss_coeff": 0.01}},
}


@pytest.mark.parametrize("family", sorted(FAMILY_FEATURES))
def test_each_familys_features_train_through_the_entry(single_gpu_job, blend_data, tmp_path, family):
    """The entry builds and trains each family's layers (the plan's TransformerConfig and layer spec): the loss falls."""
    data = _tiny(blend_data, tmp_path).model_dump()
    data["model"] |= FAMILY_FEATURES[family]
    config = FullRunConfig.model_validate({**data, "eval_interval": None})
    logged: list[StepMetrics] = []
    single_gpu_job()
    result = train(config, on_log=logged.append)
    assert result.iteration == 20 and [m.iteration for m in logged] == [5, 10, 15, 20]
    assert logged[-1].train_loss < logged[0].train_loss
