"""A proxy model's shape (megatron-core's ModelShape, what memory and N are counted from), from what a spec names: a
built-in shape (base.builtin, or a ladder's built-in rung) or a Hugging Face base directory's config.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from sweep.files.records import CorruptFile, read_model
from train_entry.builtin_base import BuiltinBaseConfig
from train_entry.megatron.config import ModelShape

BUILTIN_PREFIX = "builtin:"


class BuiltinShape(Protocol):
    """What a built-in shape gives (base.builtin, sweep.ladder.config.BuiltinRung): the tiny Llama's width and depth."""

    num_layers: int
    hidden_size: int
    intermediate_size: int
    num_heads: int
    num_kv_heads: int


def builtin_shape(shape: BuiltinShape, *, vocab_size: int, seq_len: int) -> ModelShape:
    """The model a built-in shape (a rung's, or base.builtin's own) builds, as train_entry.pretrain builds it."""
    return ModelShape(
        num_layers=shape.num_layers,
        hidden_size=shape.hidden_size,
        ffn_hidden_size=shape.intermediate_size,
        num_attention_heads=shape.num_heads,
        num_query_groups=shape.num_kv_heads,
        vocab_size=vocab_size,
        seq_length=seq_len,
        untie_embeddings_and_output_weights=False,  # train_entry.pretrain ties them
    )


class HfModelConfig(BaseModel):
    """The part of a Hugging Face config.json that gives a Llama-family model's N (its other keys ignored). Strict, as
    sweep.target.families.family.DecoderConfig: `true`, "28" and 28.0 are no layer counts."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    model_type: str = ""
    hidden_size: int = Field(gt=0)
    num_hidden_layers: int = Field(gt=0)
    num_attention_heads: int = Field(gt=0)
    num_key_value_heads: int | None = Field(None, gt=0)
    head_dim: int | None = Field(None, gt=0)
    """Qwen 3 and Gemma give it where it is not hidden_size / num_attention_heads."""
    intermediate_size: int = Field(gt=0)

    def model_shape(self, *, vocab_size: int, seq_len: int, untied: bool) -> ModelShape:
        own_width = self.head_dim is not None and self.head_dim != self.hidden_size // self.num_attention_heads
        return ModelShape(
            num_layers=self.num_hidden_layers,
            hidden_size=self.hidden_size,
            ffn_hidden_size=self.intermediate_size,
            num_attention_heads=self.num_attention_heads,
            num_query_groups=self.num_key_value_heads or self.num_attention_heads,
            kv_channels=self.head_dim if own_width else None,
            vocab_size=vocab_size,
            seq_length=seq_len,
            untie_embeddings_and_output_weights=untied,
        )


class HfShape(HfModelConfig):
    """A Llama-family config.json's shape, vocabulary and whether its output layer is its input embedding."""

    vocab_size: int = Field(gt=0)
    tie_word_embeddings: bool = False

    def shape(self, seq_len: int) -> ModelShape:
        return self.model_shape(vocab_size=self.vocab_size, seq_len=seq_len, untied=not self.tie_word_embeddings)


def base_shape(model: str, builtin: BuiltinBaseConfig | None, seq_len: int) -> ModelShape | None:
    """The shape of a spec's base (`base.model`, and `base.builtin` for the built-in one); None when a Hugging Face
    base's config.json gives none."""
    if builtin is not None and model.startswith(BUILTIN_PREFIX):
        return builtin_shape(builtin, vocab_size=builtin.vocab_size, seq_len=seq_len)
    return hf_shape(Path(model), seq_len)


def hf_shape(model_dir: Path, seq_len: int) -> ModelShape | None:
    """The shape of a Hugging Face base directory, or None when its config.json does not give one."""
    try:
        return read_model(
            model_dir / "config.json", HfShape, fmt=None, what="Hugging Face config", max_bytes=1 << 20
        ).shape(seq_len)
    except (CorruptFile, ValueError):
        return None
