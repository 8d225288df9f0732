"""Toyformer (model_type toyformer), a made-up family: Llama's layers with Qwen 2.5's QKV bias and Qwen 3's
QK-norm, its own config key for the norm, and one preset."""

from __future__ import annotations

from sweep.target.families.family import DecoderConfig, Family, decoder_shape, refuse
from sweep.target.target import Target
from train_entry.megatron.config import ModelShape


class ToyformerConfig(DecoderConfig):
    qk_norm: bool = True


def toyformer_shape(config: ToyformerConfig, seq_length: int) -> ModelShape:
    if not config.qk_norm:
        raise refuse("qk_norm", False, "every Toyformer normalises its queries and keys")
    return decoder_shape(config, seq_length, add_qkv_bias=True, qk_layernorm=True)


TOYFORMER_1B = ModelShape(
    num_layers=24,
    hidden_size=2048,
    ffn_hidden_size=5632,
    num_attention_heads=16,
    num_query_groups=4,
    vocab_size=32000,
    seq_length=4096,
    add_qkv_bias=True,
    qk_layernorm=True,
)

FAMILY = Family(
    name="Toyformer",
    model_types=("toyformer",),
    config=ToyformerConfig,
    shape=toyformer_shape,
    presets=(Target(name="toyformer-1b", model=TOYFORMER_1B, max_lr=4e-4, source="made up for the family test"),),
)
