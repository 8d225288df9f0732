"""The GPT model of a run's shape as megatron-core builds it: one chunk per virtual pipeline stage, bf16, DDP-wrapped.

Transformer Engine's layer spec (flash attention, fused kernels) when TE is installed, megatron-core's
own local spec with flash attention through SDPA or flash-attn otherwise (attention.py); both save
their layer norms under TE's checkpoint keys, so a base checkpoint loads into either.
"""

from __future__ import annotations

import torch
from megatron.core import parallel_state
from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
from megatron.core.models.gpt import GPTModel
from megatron.core.models.gpt.gpt_layer_specs import (
    get_gpt_layer_local_spec,
    get_gpt_layer_with_transformer_engine_spec,
)
from megatron.core.tensor_parallel import set_defaults_if_not_set_tensor_model_parallel_attributes
from megatron.core.transformer.moe import moe_utils
from megatron.core.transformer.module import Float16Module
from megatron.core.transformer.spec_utils import ModuleSpec
from megatron.core.transformer.transformer_config import TransformerConfig

from train_entry.megatron.attention import SDPAttention
from train_entry.megatron.config import ModelShape


def layer_spec(shape: ModelShape, *, transformer_engine: bool) -> ModuleSpec:
    """The shape's decoder layer (RMSNorm from the config; QK-norm and MoE MLPs where the shape has them) from TE's
    modules, or from megatron-core's local ones with the SDPA / flash-attn core attention in place of its unfused
    one. MoE experts run as TE's grouped GEMM where TE is, one by one (SequentialMLP) otherwise."""
    experts = shape.moe.num_experts if shape.moe is not None else None
    if transformer_engine:
        return get_gpt_layer_with_transformer_engine_spec(
            num_experts=experts, moe_grouped_gemm=experts is not None, qk_layernorm=shape.qk_layernorm
        )
    if experts is not None:
        _router_gemm_without_te()
    spec = get_gpt_layer_local_spec(num_experts=experts, qk_layernorm=shape.qk_layernorm, normalization="RMSNorm")
    spec.submodules.self_attention.submodules.core_attention = SDPAttention
    return spec


def _router_gemm_without_te() -> None:
    """Lets megatron-core's MoE router run without Transformer Engine: in megatron-core 0.16.1
    (megatron/core/transformer/moe/moe_utils.py) `te_general_gemm` is imported only when TE is, but
    RouterGatingLinearFunction tests `te_general_gemm is not None` unconditionally, so the first MoE forward without
    TE raised NameError (seen on an H200, 2026-11-28). None is what its test expects for "no TE": the router's
    logits are then torch.mm in the router's dtype, megatron-core's own fallback. A release that defines the name
    is left alone."""
    if not hasattr(moe_utils, "te_general_gemm"):
        moe_utils.te_general_gemm = None


def build_chunks(shape: ModelShape, transformer: TransformerConfig, *, transformer_engine: bool) -> list[GPTModel]:
    """This rank's model chunks: one per virtual pipeline stage (one without interleaving).

    The embedding lives on the first chunk of the first pipeline stage and the output layer and
    loss on the last chunk of the last stage. Weights are created where transformer says
    (on the GPU, or on the CPU with use_cpu_initialization) and not moved.
    """
    virtual = transformer.virtual_pipeline_model_parallel_size
    spec = layer_spec(shape, transformer_engine=transformer_engine)
    chunks = []
    for stage in range(virtual or 1):
        vp_stage = stage if virtual else None
        chunk = GPTModel(
            config=transformer,
            transformer_layer_spec=spec,
            vocab_size=shape.vocab_size,
            max_sequence_length=shape.seq_length,
            pre_process=parallel_state.is_pipeline_first_stage(ignore_virtual=False, vp_stage=vp_stage),
            post_process=parallel_state.is_pipeline_last_stage(ignore_virtual=False, vp_stage=vp_stage),
            share_embeddings_and_output_weights=not shape.untie_embeddings_and_output_weights,
            position_embedding_type="rope",
            rotary_base=shape.rotary_base,
            rope_scaling=shape.rope_scaling_factor is not None,
            rope_scaling_factor=shape.rope_scaling_factor or 1.0,
            vp_stage=vp_stage,
        )
        # The optimizer and the gradient clipping read every parameter's tensor-parallel attributes.
        for param in chunk.parameters():
            set_defaults_if_not_set_tensor_model_parallel_attributes(param)
        chunks.append(chunk)
    return chunks


def wrap_for_training(
    chunks: list[GPTModel], transformer: TransformerConfig, ddp: DistributedDataParallelConfig
) -> list[DistributedDataParallel]:
    """Chunks on this rank's GPU, cast to bf16 (fp32 main weights live in the optimizer), in megatron-core's DDP.

    Only the first chunk splits its gradients into buckets: the other chunks' reductions already
    overlap with the first chunk's backward pass.
    """
    wrapped = []
    for index, chunk in enumerate(chunks):
        module = chunk.cuda(torch.cuda.current_device())
        if transformer.bf16 or transformer.fp16:
            module = Float16Module(transformer, module)
        wrapped.append(
            DistributedDataParallel(config=transformer, ddp_config=ddp, module=module, disable_bucketing=index > 0)
        )
    return wrapped
