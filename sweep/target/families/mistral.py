"""Mistral (model_type mistral): Llama's layers with sliding-window attention where sliding_window is set (7B
v0.1: 4096; v0.3 and Nemo: null). Mistral 7B v0.1 is a preset; Mistral AI do not publish its pretraining tokens or
peak LR, so a plan of it asks for --max-lr."""

from __future__ import annotations

from pydantic import Field

from sweep.target.families.family import DecoderConfig, Family, decoder_shape
from sweep.target.target import Target
from train_entry.megatron.config import ModelShape


class MistralConfig(DecoderConfig):
    sliding_window: int | None = Field(None, gt=0)
    """Tokens each token attends to, itself included (transformers' Mistral mask); None: the whole prefix."""


def mistral_shape(config: MistralConfig, seq_length: int) -> ModelShape:
    return decoder_shape(config, seq_length, window_size=config.sliding_window)


MISTRAL_7B = ModelShape(
    num_layers=32,
    hidden_size=4096,
    ffn_hidden_size=14336,
    num_attention_heads=32,
    num_query_groups=8,
    vocab_size=32000,
    seq_length=8192,
    rotary_base=10_000,
    rope_scaling_factor=None,
    norm_epsilon=1e-5,
    window_size=4096,
)
_MISTRAL = (
    "Mistral 7B (arXiv:2310.06825) Table 1 (window 4096, context 8192); mistralai/Mistral-7B-v0.1 config.json; "
    "7.24B parameters in its safetensors as the Hugging Face Hub counts them; pretraining tokens and peak LR not "
    "published"
)

FAMILY = Family(
    name="Mistral",
    model_types=("mistral",),
    config=MistralConfig,
    shape=mistral_shape,
    presets=(Target(name="mistral-7b", model=MISTRAL_7B, source=_MISTRAL),),
)
