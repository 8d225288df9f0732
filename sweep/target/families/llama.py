"""Llama (model_type llama): the planner's own architecture, nothing laid over it; Meta's Llama 3.1 base models as
presets.

Shapes and peak LRs are from "The Llama 3 Herd of Models" (Dubey et al., 2024, arXiv:2407.21783), Table 3 (layers,
model dimension, FFN dimension, attention heads, key/value heads, peak learning rate, vocabulary 128K, RoPE base
500 000) and the released checkpoints' config.json (vocab_size 128256, rope_theta 500000, rms_norm_eps 1e-5,
rope_scaling factor 8, untied embeddings); sequences are the reference recipe's 8192 tokens. Pretraining tokens:
15.6T for the 405B (the paper); 15T for 8B and 70B (Meta's Llama 3.1 model card: "over 15 trillion tokens").
"""

from __future__ import annotations

from sweep.target.families.family import DecoderConfig, Family, decoder_shape, refuse
from sweep.target.target import Target
from train_entry.megatron.config import ModelShape


def llama_shape(config: DecoderConfig, seq_length: int) -> ModelShape:
    if config.attention_bias:
        # transformers' Llama biases the output projection too, which megatron-core's add_qkv_bias leaves out.
        raise refuse("attention_bias", True, "Llama's attention bias includes o_proj's, which Megatron has no flag for")
    return decoder_shape(config, seq_length)


LLAMA_3_1_8B = ModelShape(
    num_layers=32,
    hidden_size=4096,
    ffn_hidden_size=14336,
    num_attention_heads=32,
    num_query_groups=8,
    vocab_size=128256,
    seq_length=8192,
)
"""Meta's Llama 3.1 8B (base) at the reference recipe's 8192-token sequences."""

LLAMA_3_1_70B = ModelShape(
    num_layers=80,
    hidden_size=8192,
    ffn_hidden_size=28672,
    num_attention_heads=64,
    num_query_groups=8,
    vocab_size=128256,
    seq_length=8192,
)
"""Meta's Llama 3.1 70B (base) at the reference recipe's 8192-token sequences."""

LLAMA_3_1_405B = ModelShape(
    num_layers=126,
    hidden_size=16384,
    ffn_hidden_size=53248,
    num_attention_heads=128,
    num_query_groups=8,
    vocab_size=128256,
    seq_length=8192,
)

_LLAMA3_PAPER = "Llama 3 Herd of Models (arXiv:2407.21783) Table 3; Meta's Llama 3.1 config.json"

FAMILY = Family(
    name="Llama",
    model_types=("llama",),
    config=DecoderConfig,
    shape=llama_shape,
    presets=(
        Target(name="llama3.1-8b", model=LLAMA_3_1_8B, max_lr=3e-4, pretrain_tokens=15e12, source=_LLAMA3_PAPER),
        Target(name="llama3.1-70b", model=LLAMA_3_1_70B, max_lr=1.5e-4, pretrain_tokens=15e12, source=_LLAMA3_PAPER),
        Target(name="llama3.1-405b", model=LLAMA_3_1_405B, max_lr=8e-5, pretrain_tokens=15.6e12, source=_LLAMA3_PAPER),
    ),
)
