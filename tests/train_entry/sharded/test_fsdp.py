"""Which modules a sharded trial shards as units of their own, and the mixed precision it shards them with."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from train_entry.model import Runtime
from train_entry.sharded.fsdp import mixed_precision, shard_units


def llama(*, tied: bool) -> LlamaForCausalLM:
    config = LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=3, num_attention_heads=2,
        num_key_value_heads=1, tie_word_embeddings=tied,
    )  # fmt: skip
    with torch.device("meta"):
        return LlamaForCausalLM(config)


def test_each_decoder_layer_is_a_unit_and_so_are_untied_embeddings_in_the_order_they_run():
    tied, untied = llama(tied=True), llama(tied=False)

    assert shard_units(tied) == list(tied.model.layers)
    # Tied, the embedding and output layer share one weight: they stay in the root unit together.
    assert shard_units(untied) == [untied.model.embed_tokens, *untied.model.layers, untied.lm_head]


@pytest.mark.parametrize(
    ("device", "param_dtype", "reduce_dtype"),
    [("cuda", torch.bfloat16, torch.float32), ("cpu", None, None)],
)
def test_bf16_compute_with_fp32_reduction_on_cuda_and_fp32_throughout_on_cpu(device, param_dtype, reduce_dtype):
    policy = mixed_precision(Runtime(torch.device(device), "sdpa", None))
    assert (policy.param_dtype, policy.reduce_dtype) == (param_dtype, reduce_dtype)
