"""core_configs builds megatron-core's own configs on CPU, so megatron-core's checks judge a plan."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from megatron.core.transformer.enums import AttnBackend

from train_entry.megatron.config import FullRunConfig
from train_entry.megatron.core_configs import CoreConfigError, check_backend, core_configs


def test_builds_megatron_core_configs_for_the_reference_layouts(full_run):
    transformer, optimizer, ddp = core_configs(full_run, transformer_engine=False)
    model, par, opt = full_run.model, full_run.parallelism, full_run.optimization
    assert (transformer.num_layers, transformer.hidden_size, transformer.ffn_hidden_size) == (
        model.num_layers,
        model.hidden_size,
        model.ffn_hidden_size,
    )
    assert (transformer.num_attention_heads, transformer.num_query_groups, transformer.kv_channels) == (
        model.num_attention_heads,
        model.num_query_groups,
        128,
    )
    assert transformer.normalization == "RMSNorm" and transformer.gated_linear_unit
    assert transformer.activation_func is F.silu and not transformer.add_bias_linear
    assert (
        transformer.tensor_model_parallel_size,
        transformer.pipeline_model_parallel_size,
        transformer.virtual_pipeline_model_parallel_size,
        transformer.context_parallel_size,
        transformer.sequence_parallel,
    ) == (par.tensor, par.pipeline, par.virtual_pipeline, par.context, par.sequence_parallel)
    assert transformer.params_dtype is torch.bfloat16 and transformer.pipeline_dtype is torch.bfloat16
    assert transformer.recompute_granularity == (None if par.recompute == "none" else par.recompute)
    assert transformer.attention_backend is AttnBackend.local
    assert (optimizer.lr, optimizer.min_lr, optimizer.adam_beta2, optimizer.clip_grad) == (
        opt.lr,
        opt.min_lr,
        opt.adam_beta2,
        opt.clip_grad,
    )
    assert optimizer.use_distributed_optimizer and ddp.use_distributed_optimizer and ddp.grad_reduce_in_fp32
    assert optimizer.overlap_param_gather == ddp.overlap_param_gather


def test_megatron_core_rejects_heads_that_tensor_parallelism_does_not_divide(full_run_data):
    # 128256 vocabulary rows split three ways, so only megatron-core's own head check can object.
    config = FullRunConfig.model_validate(full_run_data(tensor=3, pipeline=4))
    with pytest.raises(
        CoreConfigError, match=r"num_attention_heads \(64\) must be a multiple of tensor_model_parallel_size \(3\)"
    ):
        core_configs(config, transformer_engine=False)


def test_rejects_layers_that_the_pipeline_does_not_divide(full_run_data):
    # megatron-core checks the split only when it builds the model, on the GPUs: the run config checks it first.
    with pytest.raises(ValueError, match="num_layers=80 does not split over pipeline=4 stages x virtual_pipeline=3"):
        FullRunConfig.model_validate(full_run_data(tensor=8, pipeline=4, virtual_pipeline=3))


def test_uneven_first_and_last_stages_reach_megatron_core(full_run_data):
    """Llama 3 405B's split on 16 stages (arXiv:2407.21783 section 3.3.2): one layer fewer on the first and last."""
    data = full_run_data(tensor=8, pipeline=16)
    data["model"] |= {"num_layers": 126}
    data["parallelism"] |= {"first_stage_layers": 7, "last_stage_layers": 7}
    config = FullRunConfig.model_validate(data)
    assert config.parallelism.stage_layers(126) == [7] + [8] * 14 + [7]
    transformer, _, _ = core_configs(config, transformer_engine=False)
    assert (transformer.num_layers_in_first_pipeline_stage, transformer.num_layers_in_last_pipeline_stage) == (7, 7)
    data["parallelism"] |= {"first_stage_layers": 6}  # 113 middle layers do not split over 14 stages
    with pytest.raises(ValueError, match="first_stage_layers=6, last_stage_layers=7: the other stages must hold"):
        FullRunConfig.model_validate(data)


def test_fp32_run_builds_fp32_configs(full_run_data):
    data = full_run_data(tensor=8)
    data["optimization"] |= {"bf16": False}
    transformer, optimizer, ddp = core_configs(FullRunConfig.model_validate(data), transformer_engine=False)
    assert transformer.params_dtype is torch.float32 and not optimizer.bf16 and not ddp.grad_reduce_in_fp32


@pytest.mark.parametrize(
    ("parallelism", "named"),
    [
        ({"tensor": 8, "context": 2}, "parallelism.context=2"),
        ({"tensor": 8, "sequence_parallel": True}, "parallelism.sequence_parallel=True"),
        (
            {"tensor": 8, "context": 2, "sequence_parallel": True},
            "parallelism.context=2, parallelism.sequence_parallel=True",
        ),
    ],
)
def test_without_transformer_engine_context_and_sequence_parallelism_are_refused_by_name(
    full_run_data, parallelism, named
):
    config = FullRunConfig.model_validate(full_run_data(**parallelism))
    with pytest.raises(CoreConfigError, match=rf"Transformer Engine's layers are needed for {named}, and this node"):
        check_backend(config, transformer_engine=False)
    check_backend(config, transformer_engine=True)
    check_backend(FullRunConfig.model_validate(full_run_data(tensor=8)), transformer_engine=False)


def test_without_transformer_engine_megatron_cores_own_fusions_stay_on(full_run):
    transformer, _, _ = core_configs(full_run, transformer_engine=False)
    assert transformer.bias_activation_fusion and transformer.bias_dropout_fusion
    assert transformer.cross_entropy_loss_fusion and transformer.cross_entropy_fusion_impl == "native"
    # These two need TE's (or Apex's) kernels; megatron-core refuses apply_rope_fusion without them.
    assert not transformer.apply_rope_fusion and not transformer.gradient_accumulation_fusion
