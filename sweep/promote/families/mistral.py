"""Mistral (model_type mistral): Llama's layers with sliding-window attention where sliding_window is set (7B
v0.1: 4096; v0.3 and Nemo: null)."""

from __future__ import annotations

from pydantic import Field

from sweep.promote.families.family import DecoderConfig, Family, decoder_shape
from train_entry.megatron.config import ModelShape


class MistralConfig(DecoderConfig):
    sliding_window: int | None = Field(None, gt=0)
    """Tokens each token attends to, itself included (transformers' Mistral mask); None: the whole prefix."""


def mistral_shape(config: MistralConfig, seq_length: int) -> ModelShape:
    return decoder_shape(config, seq_length, window_size=config.sliding_window)


FAMILY = Family(name="Mistral", model_types=("mistral",), config=MistralConfig, shape=mistral_shape)
