"""The SDPA core attention against attention written out, on CPU, and against megatron-core's own
DotProductAttention on CUDA (whose forward allocates from megatron-core's CUDA memory buffer)."""

from __future__ import annotations

import math
import re

import pytest
import torch
from megatron.core.transformer.enums import AttnMaskType
from megatron.core.transformer.transformer_config import TransformerConfig

from train_entry.megatron.attention import SDPAttention

SEQUENCE, BATCH, HEAD_DIM = 16, 2, 8


def _config(heads: int, groups: int, **overrides) -> TransformerConfig:
    return TransformerConfig(
        num_layers=1,
        hidden_size=heads * HEAD_DIM,
        num_attention_heads=heads,
        num_query_groups=groups,
        attention_dropout=0.0,
        hidden_dropout=0.0,
        use_cpu_initialization=True,
        **overrides,
    )


def _inputs(heads: int, groups: int, *, dtype: torch.dtype, device: str) -> list[torch.Tensor]:
    """query [s, b, heads, d], key and value [s, b, groups, d], as megatron-core's SelfAttention passes them."""
    generator = torch.Generator().manual_seed(heads * 10 + groups)
    shapes = [(SEQUENCE, BATCH, heads, HEAD_DIM)] + [(SEQUENCE, BATCH, groups, HEAD_DIM)] * 2
    return [torch.randn(shape, generator=generator).to(device, dtype).requires_grad_() for shape in shapes]


def _written_out(query, key, value, *, causal: bool) -> torch.Tensor:
    """softmax(q k^T / sqrt(d) + causal mask) v, each key/value head shared by its group of query heads."""
    group = query.size(2) // key.size(2)
    key, value = key.repeat_interleave(group, dim=2), value.repeat_interleave(group, dim=2)
    scores = torch.einsum("sbhd,tbhd->bhst", query, key) / math.sqrt(query.size(-1))
    if causal:
        scores = scores.masked_fill(torch.ones(SEQUENCE, SEQUENCE, dtype=torch.bool).triu(1), float("-inf"))
    context = torch.einsum("bhst,tbhd->sbhd", scores.softmax(dim=-1), value)
    return context.reshape(SEQUENCE, BATCH, -1)


def _outputs_and_gradients(attention, query, key, value) -> list[torch.Tensor]:
    output = attention(query, key, value)
    gradient = torch.randn(output.shape, generator=torch.Generator().manual_seed(0)).to(output)
    inputs = (query, key, value)
    return [output, *torch.autograd.grad(output, inputs, gradient)]


@pytest.mark.parametrize(("heads", "groups"), [(4, 4), (4, 2), (8, 1)])
@pytest.mark.parametrize("mask", [AttnMaskType.causal, AttnMaskType.no_mask])
def test_outputs_and_gradients_match_attention_written_out(heads, groups, mask):
    attention = SDPAttention(_config(heads, groups), 1, mask, "self")
    query, key, value = _inputs(heads, groups, dtype=torch.float64, device="cpu")
    got = _outputs_and_gradients(lambda q, k, v: attention(q, k, v, None), query, key, value)
    causal = mask is AttnMaskType.causal
    expected = _outputs_and_gradients(lambda q, k, v: _written_out(q, k, v, causal=causal), query, key, value)
    for name, actual, wanted in zip(("output", "dq", "dk", "dv"), got, expected, strict=True):
        torch.testing.assert_close(actual, wanted, msg=name)


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"context_parallel_size": 2}, "context_parallel_size=2"),
        ({"attention_dropout": 0.1}, "attention_dropout=0.1"),
        ({"window_size": (128, 0)}, "window_size=(128, 0)"),
    ],
)
def test_refuses_what_it_does_not_compute_naming_the_setting(overrides, named):
    config = _config(4, 2) if "attention_dropout" in overrides else _config(4, 2, **overrides)
    dropout = overrides.get("attention_dropout")
    with pytest.raises(ValueError, match=rf"SDPAttention supports only .*got {re.escape(named)}"):
        SDPAttention(config, 1, AttnMaskType.causal, "self", attention_dropout=dropout)


def test_refuses_an_explicit_mask():
    attention = SDPAttention(_config(4, 2), 1, AttnMaskType.causal, "self")
    query, key, value = _inputs(4, 2, dtype=torch.float32, device="cpu")
    with pytest.raises(ValueError, match="no attention_mask"):
        attention(query, key, value, torch.ones(SEQUENCE, SEQUENCE, dtype=torch.bool))


@pytest.mark.gpu
# bf16: megatron-core rounds the scores to bf16 before its fp32 softmax, flash attention keeps them in
# fp32; each lies up to ~0.04 from the float64 result on these inputs (a wrong mask or head grouping: ~1).
@pytest.mark.parametrize(("dtype", "tolerance"), [(torch.float32, (1e-4, 1e-5)), (torch.bfloat16, (2e-2, 8e-2))])
@pytest.mark.parametrize(("heads", "groups"), [(4, 4), (8, 2)])
def test_matches_megatron_cores_dot_product_attention_on_cuda(single_rank_group, dtype, tolerance, heads, groups):
    from megatron.core.tensor_parallel import model_parallel_cuda_manual_seed
    from megatron.core.transformer.dot_product_attention import DotProductAttention

    model_parallel_cuda_manual_seed(1234)  # DotProductAttention forks megatron-core's CUDA RNG for its dropout
    config = _config(heads, groups, bf16=dtype is torch.bfloat16, params_dtype=dtype)
    query, key, value = _inputs(heads, groups, dtype=dtype, device="cuda")
    results = [
        _outputs_and_gradients(
            lambda q, k, v, module=module: module(q, k, v, None, attn_mask_type=AttnMaskType.causal), query, key, value
        )
        for module in (
            SDPAttention(config, 1, AttnMaskType.causal, "self"),
            DotProductAttention(config, 1, AttnMaskType.causal, "self").cuda(),
        )
    ]
    for name, ours, megatron_cores in zip(("output", "dq", "dk", "dv"), *results, strict=True):
        torch.testing.assert_close(ours, megatron_cores, rtol=tolerance[0], atol=tolerance[1], msg=name)
