"""Qwen 2 / 2.5 (model_type qwen2: biases on the QKV projections) and Qwen 3 (model_type qwen3: QK-norm, no
biases, heads as wide as head_dim). Both carry a sliding-window option their released base models leave off. One size of each is a preset; Qwen do not
publish their pretraining peak LRs, so a plan of one asks for --max-lr."""

from __future__ import annotations

from pydantic import Field

from sweep.target.families.family import DecoderConfig, Family, decoder_shape, refuse
from sweep.target.target import Target
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


QWEN_2_5_3B = ModelShape(
    num_layers=36,
    hidden_size=2048,
    ffn_hidden_size=11008,
    num_attention_heads=16,
    num_query_groups=2,
    vocab_size=151936,
    seq_length=8192,
    rotary_base=1_000_000,
    rope_scaling_factor=None,
    norm_epsilon=1e-6,
    untie_embeddings_and_output_weights=False,
    add_qkv_bias=True,
)
_QWEN_2_5 = (
    "Qwen/Qwen2.5-3B config.json and model card (3.09B parameters, 2.77B non-embedding; tied embeddings); "
    "Qwen2.5 Technical Report (arXiv:2412.15115) abstract: 18T pretraining tokens; peak LR not published"
)

QWEN_3_32B = ModelShape(
    num_layers=64,
    hidden_size=5120,
    ffn_hidden_size=25600,
    num_attention_heads=64,
    num_query_groups=8,
    kv_channels=128,
    vocab_size=151936,
    seq_length=8192,
    rotary_base=1_000_000,
    rope_scaling_factor=None,
    norm_epsilon=1e-6,
    qk_layernorm=True,
)
_QWEN_3 = (
    "Qwen/Qwen3-32B config.json and model card (32.8B parameters, 31.2B non-embedding); Qwen3 Technical Report "
    "(arXiv:2505.09388) abstract: about 36T pretraining tokens, QK-norm in place of QKV bias; peak LR not published"
)

QWEN2 = Family(
    name="Qwen 2 / 2.5",
    model_types=("qwen2",),
    config=QwenConfig,
    shape=qwen2_shape,
    presets=(Target(name="qwen2.5-3b", model=QWEN_2_5_3B, pretrain_tokens=18e12, source=_QWEN_2_5),),
)
QWEN3 = Family(
    name="Qwen 3",
    model_types=("qwen3",),
    config=QwenConfig,
    shape=qwen3_shape,
    presets=(Target(name="qwen3-32b", model=QWEN_3_32B, pretrain_tokens=36e12, source=_QWEN_3),),
)
