"""The family interface and the config.json keys every Llama-style decoder shares.

A config.json is untrusted input: its keys are typed and bounded here, a key of another type names the file and
the key, and a key whose value the planner cannot represent (an activation other than SiLU, a RoPE scaling
other than Llama 3's, biases on the MLP) is refused by name rather than planned as something else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sweep.target.errors import TargetError
from sweep.target.target import Target
from train_entry.config import shown
from train_entry.megatron.config import ModelShape


class UnmappableConfig(TargetError):
    """A config.json whose architecture the planner cannot represent; the message names the key and why."""


class DecoderConfig(BaseModel):
    """The keys of a Hugging Face config.json that a Llama-style decoder shares (transformers' names); a family's
    own config class adds its keys. Others are ignored: they do not change the shape (dtype, token ids).

    Strict: an integer is a JSON integer, not `true` (read as 1 layer, planned as --num-layers 1), "28" or 28.0; a
    float may be written as an integer (rope_theta 500000), never as a boolean or a string."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    model_type: str
    hidden_size: int = Field(gt=0, le=1 << 20)
    num_hidden_layers: int = Field(gt=0, le=10_000)
    num_attention_heads: int = Field(gt=0, le=1 << 16)
    num_key_value_heads: int | None = Field(None, gt=0, le=1 << 16)
    """None: as many as the attention heads (plain multi-head attention), as transformers defaults."""
    head_dim: int | None = Field(None, gt=0, le=1 << 16)
    intermediate_size: int = Field(gt=0, le=1 << 24)
    vocab_size: int = Field(gt=0, le=1 << 24)
    max_position_embeddings: int = Field(gt=0, le=1 << 24)
    rope_theta: float = Field(10_000.0, gt=0.0)
    rms_norm_eps: float = Field(1e-6, gt=0.0, lt=1.0)
    tie_word_embeddings: bool = False
    hidden_act: str = "silu"
    rope_scaling: dict[str, Any] | None = None
    attention_bias: bool = False
    mlp_bias: bool = False
    attention_dropout: float = 0.0
    partial_rotary_factor: float = 1.0
    """The share of each head's width RoPE rotates (transformers reads it where a config gives it); the plan's
    Megatron-LM arguments rotate the whole head (--rotary-percent 1.0)."""


@dataclass(frozen=True)
class Family:
    """One architecture: the config.json model_types it reads, their typed keys, and their reading into a shape."""

    name: str
    model_types: tuple[str, ...]
    config: type[DecoderConfig]
    """The family's keys: DecoderConfig and what the family adds."""
    shape: Callable[[Any, int], ModelShape]
    """(its config, the training sequence length) -> the ModelShape every estimator reads."""
    presets: tuple[Target, ...] = ()
    """Its named targets (`--target llama3.1-70b`), each citing its sources: sizes of the family as released."""


def refuse(key: str, value: object, why: str) -> UnmappableConfig:
    """The error for a key the planner cannot represent: `raise refuse("hidden_act", "gelu", "...")`."""
    return UnmappableConfig(f"{key} = {shown(value)} cannot be planned: {why}")


def decoder_shape(config: DecoderConfig, seq_length: int, **features: Any) -> ModelShape:
    """The Llama-style core of a shape (SiLU SwiGLU, RMSNorm, RoPE, grouped-query attention), with a family's
    `features` (ModelShape fields) laid over it; UnmappableConfig for a key outside that core."""
    if config.hidden_act != "silu":
        raise refuse("hidden_act", config.hidden_act, "the planner's MLP is SwiGLU with SiLU (Megatron's --swiglu)")
    if config.mlp_bias:
        raise refuse("mlp_bias", True, "Megatron's Llama-style layers have no MLP biases (--disable-bias-linear)")
    if config.attention_dropout:
        raise refuse("attention_dropout", config.attention_dropout, "the full run trains without dropout")
    if config.partial_rotary_factor != 1.0:
        raise refuse("partial_rotary_factor", config.partial_rotary_factor, "the plan rotates each head's whole width "
                     "(megatron-core's rotary_percent 1.0, which the full-run entry builds)")  # fmt: skip
    heads = config.num_attention_heads
    own_width = config.head_dim is not None and config.head_dim * heads != config.hidden_size
    return ModelShape(
        num_layers=config.num_hidden_layers,
        hidden_size=config.hidden_size,
        ffn_hidden_size=config.intermediate_size,
        num_attention_heads=heads,
        num_query_groups=config.num_key_value_heads or heads,
        kv_channels=config.head_dim if own_width else None,
        vocab_size=config.vocab_size,
        seq_length=seq_length,
        rotary_base=_integral("rope_theta", config.rope_theta),
        rope_scaling_factor=_rope_scaling(config.rope_scaling),
        norm_epsilon=config.rms_norm_eps,
        untie_embeddings_and_output_weights=not config.tie_word_embeddings,
        **features,
    )


def _integral(key: str, value: float) -> int:
    if value != int(value):
        raise refuse(key, value, "Megatron's --rotary-base takes a whole number")
    return int(value)


def _rope_scaling(scaling: dict[str, Any] | None) -> float | None:
    """Llama 3.1's RoPE scaling factor, or None for plain RoPE; other kinds of scaling are refused by name."""
    if scaling is None:
        return None
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "default":
        return None
    factor = scaling.get("factor")
    # megatron-core's --use-rope-scaling applies Llama 3's frequency scaling with Meta's own constants.
    llama3 = {"rope_type": "llama3", "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 8192}  # fmt: skip
    # A number compared as a number only: True == 1.0 in Python, and `true` is no low_freq_factor.
    constants = [(scaling.get(key), value) for key, value in llama3.items() if key != "rope_type"]
    if kind != "llama3" or any(isinstance(got, bool) or got != value for got, value in constants):
        raise refuse("rope_scaling", scaling, "only Llama 3.1's (rope_type llama3, Meta's constants) maps onto "
                     "megatron-core's --use-rope-scaling")  # fmt: skip
    if not isinstance(factor, (int, float)) or isinstance(factor, bool) or factor <= 1:
        raise refuse("rope_scaling.factor", factor, "a number above 1 is needed")
    return float(factor)
