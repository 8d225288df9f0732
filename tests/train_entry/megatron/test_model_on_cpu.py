"""The Llama GPT model megatron-core builds for a run, built on CPU (its forward pass needs CUDA)."""

from __future__ import annotations

import pytest
from megatron.core.models.gpt import GPTModel
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
from megatron.core.transformer.dot_product_attention import DotProductAttention

from sweep.scale import total_params
from train_entry.megatron.attention import SDPAttention
from train_entry.megatron.config import FullRunConfig, ModelShape, MoE
from train_entry.megatron.core_configs import core_configs
from train_entry.megatron.model import build_chunks

TINY = ModelShape(
    num_layers=2,
    hidden_size=64,
    ffn_hidden_size=128,
    num_attention_heads=4,
    num_query_groups=2,
    vocab_size=128,
    seq_length=32,
)


def _llama_parameters(shape: ModelShape) -> int:
    """Parameters of a Llama decoder, counted from its definition (no biases)."""
    h, f, v = shape.hidden_size, shape.ffn_hidden_size, shape.vocab_size
    kv = shape.num_query_groups * h // shape.num_attention_heads
    attention = h * (h + 2 * kv) + h * h
    mlp = 2 * h * f + f * h  # SwiGLU: gate and up projections, then down
    layer = attention + mlp + 2 * h  # two RMSNorm weights
    embeddings = v * h * (2 if shape.untie_embeddings_and_output_weights else 1)
    return shape.num_layers * layer + embeddings + h  # + the final RMSNorm


def _chunks(full_run_data, shape: ModelShape, **parallelism):
    data = full_run_data(**parallelism)
    data["model"] = shape.model_dump()
    data["optimization"] |= {"bf16": False}
    config = FullRunConfig.model_validate(data)
    transformer, _, _ = core_configs(config, transformer_engine=False, use_cpu_initialization=True)
    return build_chunks(config.model, transformer, transformer_engine=False)


@pytest.mark.parametrize("untied", [True, False])
def test_one_chunk_holds_the_whole_llama_model(single_rank_group, full_run_data, untied):
    shape = TINY.model_copy(update={"untie_embeddings_and_output_weights": untied})
    (chunk,) = _chunks(full_run_data, shape)
    assert chunk.pre_process and chunk.post_process
    assert sum(param.numel() for param in chunk.parameters()) == _llama_parameters(shape)


def test_checkpoint_keys_are_transformer_engines_so_converted_bases_load(single_rank_group, full_run_data):
    (chunk,) = _chunks(full_run_data, TINY)
    keys = {value.key for value in chunk.sharded_state_dict().values() if hasattr(value, "key")}
    assert {
        "embedding.word_embeddings.weight",
        "decoder.layers.self_attention.linear_qkv.layer_norm_weight",
        "decoder.layers.self_attention.linear_qkv.weight",
        "decoder.layers.mlp.linear_fc1.layer_norm_weight",
        "decoder.layers.mlp.linear_fc2.weight",
        "decoder.final_layernorm.weight",
        "output_layer.weight",
    } <= keys
    assert not any("input_layernorm" in key or "pre_mlp_layernorm" in key for key in keys)


def test_without_transformer_engine_the_layers_attend_through_sdpa_under_the_local_specs_keys(
    single_rank_group, full_run_data
):
    (chunk,) = _chunks(full_run_data, TINY)
    layers = chunk.decoder.layers
    assert [type(layer.self_attention.core_attention) for layer in layers] == [SDPAttention] * TINY.num_layers
    transformer = layers[0].config
    megatron_cores_own = GPTModel(
        config=transformer,
        transformer_layer_spec=get_gpt_layer_local_spec(qk_layernorm=False, normalization="RMSNorm"),
        vocab_size=TINY.vocab_size,
        max_sequence_length=TINY.seq_length,
        share_embeddings_and_output_weights=not TINY.untie_embeddings_and_output_weights,
        position_embedding_type="rope",
    )
    assert type(megatron_cores_own.decoder.layers[0].self_attention.core_attention) is DotProductAttention

    def keys(model) -> set[str]:
        return {value.key for value in model.sharded_state_dict().values() if hasattr(value, "key")}

    assert keys(chunk) == keys(megatron_cores_own)


def test_selective_recompute_recomputes_the_mlp_and_leaves_the_flash_attention_alone(single_rank_group, full_run_data):
    (chunk,) = _chunks(full_run_data, TINY, recompute="selective")
    layers = chunk.decoder.layers
    assert [layer.recompute_mlp for layer in layers] == [True] * TINY.num_layers
    assert [layer.self_attention.checkpoint_core_attention for layer in layers] == [False] * TINY.num_layers


FAMILIES = {
    # Qwen 2.5: QKV bias, tied embeddings; Qwen 3: QK-norm, heads wider than hidden / heads; an MoE model: 4 experts,
    # top 2, narrower than the dense MLP.
    "qwen2.5": TINY.model_copy(update={"add_qkv_bias": True, "untie_embeddings_and_output_weights": False}),
    "qwen3": TINY.model_copy(update={"qk_layernorm": True, "kv_channels": 32}),
    "moe": TINY.model_copy(update={"moe": MoE(num_experts=4, router_topk=2, expert_ffn_hidden_size=48)}),
}


@pytest.mark.parametrize(
    "family",
    # megatron-core's MoELayer opens a CUDA stream when it is built: the MoE shape is checked where CUDA is.
    [pytest.param(name, marks=pytest.mark.gpu) if FAMILIES[name].moe else name for name in sorted(FAMILIES)],
)
def test_megatron_core_builds_each_family_with_the_parameters_the_planner_counts(
    single_rank_group, full_run_data, family
):
    """The plan's memory model and the published-count tests rest on sweep.scale's counts: megatron-core's own
    model of each family's shape must hold exactly that many parameters."""
    shape = FAMILIES[family]
    (chunk,) = _chunks(full_run_data, shape)
    assert sum(param.numel() for param in chunk.parameters()) == total_params(shape)
    attention = chunk.decoder.layers[0].self_attention
    assert (attention.linear_qkv.bias is not None) == shape.add_qkv_bias
    assert (type(attention.q_layernorm).__name__ != "IdentityOp") == shape.qk_layernorm
    assert (type(chunk.decoder.layers[0].mlp).__name__ == "MoELayer") == (shape.moe is not None)


def test_an_moe_layer_without_transformer_engine_routes_with_megatron_cores_own_fallback():
    """megatron-core 0.16.1 reads `te_general_gemm` in its router's gating GEMM but defines it only where Transformer
    Engine is installed: without TE the first MoE forward raised NameError (an H200, 2026-11-28). The local spec of an
    MoE shape makes the gating run megatron-core's torch.mm fallback, forward and backward, in the router's dtype."""
    import torch
    from megatron.core.transformer.moe.moe_utils import router_gating_linear

    from train_entry.megatron.model import layer_spec

    layer_spec(FAMILIES["moe"], transformer_engine=False)
    inputs = torch.randn(3, 2, 64, dtype=torch.bfloat16, requires_grad=True)
    weight = torch.randn(4, 64, dtype=torch.bfloat16, requires_grad=True)
    logits = router_gating_linear(inputs, weight, None, torch.float32)
    assert logits.dtype == torch.float32 and logits.shape == (3, 2, 4)
    assert torch.allclose(logits, inputs.float() @ weight.float().t())
    logits.sum().backward()
    assert inputs.grad.shape == inputs.shape and weight.grad.shape == weight.shape
