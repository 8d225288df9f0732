"""Saving and loading a full run's state as megatron-core distributed checkpoints.

A checkpoint holds the model chunks' weights (under Megatron-LM's keys: "model", or "model0",
"model1", ... with virtual pipeline stages), the distributed optimizer's sharded state, the LR
scheduler's state, the iteration, the run config it was written by, and what its evaluator keeps (the base's
validation losses, train_entry/megatron/evaluation.py). Every data-parallel rank
writes and reads its own part (fully parallel save and load), and the layout may change between
save and load in the data-parallel dimension.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch.distributed as dist
from megatron.core import dist_checkpointing, parallel_state
from megatron.core.dist_checkpointing.serialization import (
    get_default_load_sharded_strategy,
    get_default_save_sharded_strategy,
)
from megatron.core.dist_checkpointing.strategies.fully_parallel import (
    FullyParallelLoadStrategyWrapper,
    FullyParallelSaveStrategyWrapper,
)
from megatron.core.distributed import DistributedDataParallel
from megatron.core.optimizer import ChainedOptimizer, MegatronOptimizer
from megatron.core.optimizer_param_scheduler import OptimizerParamScheduler
from megatron.core.safe_globals import register_safe_globals
from megatron.core.utils import unwrap_model

from train_entry.megatron.checkpoints import CheckpointError, iteration_dir, write_tracker
from train_entry.megatron.config import FullRunConfig, ModelShape
from train_entry.megatron.optimizer_state import finish_load, prepare_for_load

CONTENT_METADATA = {
    # dp_reshardable: each rank writes its optimizer shard as is (no gathering); a resume may use
    # another data-parallel size, which is all a restart after a lost node can change.
    "distrib_optim_sharding_type": "dp_reshardable",
    "singleton_local_shards": False,
    "chained_optim_avoid_prefix": True,
}
"""How the state is laid out, as Megatron-LM records it, so its tools read these checkpoints too."""


def save(
    root: Path,
    iteration: int,
    *,
    model: list[DistributedDataParallel],
    optimizer: MegatronOptimizer,
    scheduler: OptimizerParamScheduler,
    config: FullRunConfig,
    evaluations: dict[str, Any] | None = None,
) -> Path:
    """Write the run's state as `root`/iter_NNNNNNN and then name it in the tracker. Collective.

    evaluations: the evaluator's state (plain JSON data), the same on every rank."""
    directory = iteration_dir(root, iteration)
    if dist.get_rank() == 0:
        directory.mkdir(parents=True, exist_ok=True)
    dist.barrier()
    # With overlapped parameter all-gather the bf16 weights trail the optimizer's step until the
    # next forward pass; finish the gather so the saved weights are this iteration's.
    for chunk in model:
        chunk.disable_forward_pre_hook(param_sync=True)
    state = _model_state(model)
    state["optimizer"] = optimizer.sharded_state_dict(state, is_loading=False, metadata=_metadata())
    state["opt_param_scheduler"] = scheduler.state_dict()
    state["iteration"] = iteration
    state["run_config"] = config.model_dump_json()
    state["evaluations"] = json.dumps(evaluations or {})
    dp_cp = parallel_state.get_data_parallel_group(with_context_parallel=True)
    dist_checkpointing.save(
        state,
        str(directory),
        sharded_strategy=FullyParallelSaveStrategyWrapper(get_default_save_sharded_strategy(), dp_cp),
        content_metadata=CONTENT_METADATA,
    )
    for chunk in model:
        chunk.enable_forward_pre_hook()
    # The tracker names the checkpoint only once every rank has written its part.
    dist.barrier()
    if dist.get_rank() == 0:
        write_tracker(root, iteration)
    dist.barrier()
    return directory


def load_resume(
    directory: Path,
    *,
    model: list[DistributedDataParallel],
    optimizer: ChainedOptimizer,
    scheduler: OptimizerParamScheduler,
    shape: ModelShape,
) -> tuple[int, dict[str, Any]]:
    """Restore weights, optimizer, LR schedule from one of the run's own checkpoints; returns its iteration and the
    evaluator's state it holds."""
    loaded = read_resume(directory, model=model, optimizer=optimizer)
    saved_shape = ModelShape.model_validate(json.loads(loaded["run_config"])["model"])
    if saved_shape != shape:
        raise CheckpointError(
            f"{directory} was written by a run of another model shape: it has {saved_shape}, the config has {shape}"
        )
    _load_weights(model, loaded)
    optimizer.load_state_dict(loaded["optimizer"])
    finish_load(optimizer)
    scheduler.load_state_dict(loaded["opt_param_scheduler"])
    # A checkpoint that kept no evaluator state (one Megatron-LM wrote) resumes without the base's losses: the
    # evaluations after it are logged, and say there is nothing to measure them against.
    try:
        evaluations = json.loads(loaded.get("evaluations", "{}"))
    except (TypeError, ValueError):
        evaluations = None
    if not isinstance(evaluations, dict):
        raise CheckpointError(f"{directory}: its evaluations are not a JSON object of keys")
    return int(loaded["iteration"]), evaluations


def read_resume(
    directory: Path, *, model: list[DistributedDataParallel], optimizer: ChainedOptimizer
) -> dict[str, Any]:
    """One of the run's own checkpoints as megatron-core loads it, for this rank's model and optimizer, not yet
    applied: the request built from them, filled from `directory`."""
    # megatron-core builds the optimizer's part of the request from the state a first step creates.
    prepare_for_load(optimizer)
    request = _model_state(model)
    request["optimizer"] = optimizer.sharded_state_dict(request, is_loading=True, metadata=_metadata())
    return _load(request, directory)


def load_base(directory: Path, *, model: list[DistributedDataParallel], optimizer: MegatronOptimizer) -> None:
    """Load a base model's weights only: the optimizer stays fresh and the run starts at iteration 0."""
    _load_weights(model, _load(_model_state(model), directory))
    # The optimizer copied the (random) initial weights into its fp32 main weights when it was built.
    optimizer.reload_model_params()


def _load(request: dict[str, Any], directory: Path) -> dict[str, Any]:
    # Megatron-LM and Megatron-Bridge put argparse namespaces and config classes in the common state,
    # which torch.load reads only once they are allow-listed.
    register_safe_globals()
    dp_cp = parallel_state.get_data_parallel_group(with_context_parallel=True)
    strategy = FullyParallelLoadStrategyWrapper(get_default_load_sharded_strategy(str(directory)), dp_cp)
    return dist_checkpointing.load(request, str(directory), sharded_strategy=strategy)


def _model_state(model: list[DistributedDataParallel]) -> dict[str, Any]:
    # The GPT models' own keys, as Megatron-LM saves them: not under the DDP and bf16 wrappers' prefixes.
    keys = _model_keys(model)
    return {key: unwrap_model(chunk).sharded_state_dict(metadata=_metadata()) for key, chunk in zip(keys, model)}


def _load_weights(model: list[DistributedDataParallel], loaded: dict[str, Any]) -> None:
    for key, chunk in zip(_model_keys(model), model):
        unwrap_model(chunk).load_state_dict(loaded[key])


def _model_keys(model: list[DistributedDataParallel]) -> list[str]:
    return ["model"] if len(model) == 1 else [f"model{index}" for index in range(len(model))]


def _metadata() -> dict[str, Any]:
    """What megatron-core's sharded_state_dict methods need: the layout and the data-parallel group."""
    return {**CONTENT_METADATA, "dp_cp_group": parallel_state.get_data_parallel_group(with_context_parallel=True)}
