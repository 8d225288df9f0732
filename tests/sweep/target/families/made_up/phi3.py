"""Phi-3 (model_type phi3): Llama's layers under another model_type (its fused QKV and gate/up weights are a
checkpoint layout, not another shape); no preset, planned from its config.json."""

from __future__ import annotations

from sweep.target.families.family import DecoderConfig, Family, decoder_shape
from train_entry.megatron.config import ModelShape


def phi3_shape(config: DecoderConfig, seq_length: int) -> ModelShape:
    return decoder_shape(config, seq_length)


FAMILY = Family(name="Phi-3", model_types=("phi3",), config=DecoderConfig, shape=phi3_shape)
