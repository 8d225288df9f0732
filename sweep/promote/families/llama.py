"""Llama (model_type llama): the planner's own architecture, nothing laid over it."""

from __future__ import annotations

from sweep.promote.families.family import DecoderConfig, Family, decoder_shape, refuse
from train_entry.megatron.config import ModelShape


def llama_shape(config: DecoderConfig, seq_length: int) -> ModelShape:
    if config.attention_bias:
        # transformers' Llama biases the output projection too, which megatron-core's add_qkv_bias leaves out.
        raise refuse("attention_bias", True, "Llama's attention bias includes o_proj's, which Megatron has no flag for")
    return decoder_shape(config, seq_length)


FAMILY = Family(name="Llama", model_types=("llama",), config=DecoderConfig, shape=llama_shape)
