"""Config of the built-in base `builtin:tiny-llama` (kept light: the spec imports it); see pretrain.py."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from train_entry.config import Seed
from train_entry.optimizer import OptimizerConfig

EVAL_SEQUENCES = 64
"""Held-out sequences per side the built-in base's own general and domain losses are measured on."""
RECIPE_VERSION = 1
"""Bump when the pretraining code (train_entry.pretrain) changes what a cached base would be."""
MANIFEST = "cpt_sweep_base.json"
"""The file a pretrained built-in base's directory records its recipe and identity in."""
SHIPPED_DIR = Path(__file__).resolve().parents[1] / "data" / "tiny-llama"
"""The built-in base made from the default spec (search_spaces/lr_mix.yaml), shipped with the project so that the
first default sweep starts at once (sweep.run.shipped_base says when it is used, sweep.run.ship how it is made)."""


class BuiltinBaseConfig(OptimizerConfig):
    """Shape and pretraining recipe of `builtin:tiny-llama` (its optimizer settings are the proxy's kind).

    Upper bounds keep a typo from pretraining for days on a CPU; each is far above a proxy's size.
    Sized so that it nearly saturates on the bundled general corpus within a few CPU minutes:
    a saturated base is what makes continued pretraining trade domain gain against forgetting,
    as a real base does.
    """

    vocab_size: int = Field(4096, ge=258, le=65536)
    """Byte-level BPE vocabulary, trained on the general corpus only (so domain text is new)."""
    hidden_size: int = Field(128, ge=16, le=16_384)
    num_layers: int = Field(4, ge=1, le=256)
    num_heads: int = Field(4, ge=1, le=256)
    num_kv_heads: int = Field(2, ge=1, le=256)
    """Fewer KV heads than query heads: grouped-query attention, as in Llama 3."""
    intermediate_size: int = Field(352, ge=16, le=65_536)
    """SwiGLU width, ~2.75 x hidden as in Llama."""
    pretrain_steps: int = Field(1200, gt=0, le=1_000_000)
    batch_size: int = Field(16, gt=0, le=65_536)
    seq_len: int = Field(128, ge=8, le=131_072)
    """Also the model's max_position_embeddings; proxy seq_len may not exceed it."""
    warmup_steps: int = Field(60, ge=0)
    """5 % of pretraining: from random weights the peak LR is safe after a short warmup."""
    seed: Seed = 0

    @model_validator(mode="after")
    def _shape_fits(self) -> BuiltinBaseConfig:
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size must be a multiple of num_heads, got {self.hidden_size=}, {self.num_heads=}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_heads must be a multiple of num_kv_heads, got {self.num_heads=}, {self.num_kv_heads=}"
            )
        if self.warmup_steps >= self.pretrain_steps:
            raise ValueError(
                f"warmup_steps must be below pretrain_steps, got {self.warmup_steps=}, {self.pretrain_steps=}"
            )
        return self
