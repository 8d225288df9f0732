"""Qwen 2 / 2.5 (model_type qwen2: biases on the QKV projections) and Qwen 3 (model_type qwen3: QK-norm, no
biases, heads as wide as head_dim). Both carry a sliding-window option their released base models leave off."""

from __future__ import annotations

from pydantic import Field

from sweep.promote.families.family import DecoderConfig, Family, decoder_shape, refuse
from train_entry.megatron.config import ModelShape


class QwenConfig(DecoderConfig):
    use_sliding_window: bool = False
    """Qwen's window applies from layer max_window_layers on only: megatron-core has no such split to map it to."""
    max_window_layers: int | None = Field(None, ge=0)


def _no_window(config: QwenConfig) -> None:
    if config.use_sliding_window:
        raise refuse("use_sliding_window", True, "Qwen's window starts at layer max_window_layers, a split of the "
                     "layers megatron-core's window_size cannot express")  # fmt: skip


def qwen2_shape(config: QwenConfig, seq_length: int) -> ModelShape:
    """transformers' Qwen2Attention biases q, k and v (not o) whatever attention_bias says."""
    _no_window(config)
    return decoder_shape(config, seq_length, add_qkv_bias=True)


def qwen3_shape(config: QwenConfig, seq_length: int) -> ModelShape:
    _no_window(config)
    if config.attention_bias:
        raise refuse(
            "attention_bias", True, "Qwen 3's attention bias includes o_proj's, which Megatron has no flag for"
        )
    return decoder_shape(config, seq_length, qk_layernorm=True)


QWEN2 = Family(name="Qwen 2 / 2.5", model_types=("qwen2",), config=QwenConfig, shape=qwen2_shape)
QWEN3 = Family(name="Qwen 3", model_types=("qwen3",), config=QwenConfig, shape=qwen3_shape)
