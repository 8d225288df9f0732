"""Targets: the model a plan trains at full scale (its shape) and the base's own pretraining peak LR.

Presets are Meta's Llama 3.1 base models. Shapes and peak LRs are from "The Llama 3 Herd of
Models" (Dubey et al., 2024, arXiv:2407.21783), Table 3 (layers, model dimension, FFN dimension,
attention heads, key/value heads, peak learning rate, vocabulary 128K, RoPE base 500 000) and
the released checkpoints' config.json (vocab_size 128256, rope_theta 500000, rms_norm_eps 1e-5,
rope_scaling factor 8, untied embeddings); sequences are the reference recipe's 8192 tokens. Pretraining tokens:
15.6T for the 405B (the paper); 15T for 8B and 70B (Meta's Llama 3.1 model card: "over 15 trillion tokens").
"""

from __future__ import annotations

from pydantic import Field

from sweep.promote.presets import preset_or_file
from train_entry.config import StrictConfig
from train_entry.megatron.config import LLAMA_3_1_8B, LLAMA_3_1_70B, ModelShape


class Target(StrictConfig):
    """A full-scale model: what the plan's layout, memory and FLOPs are computed for."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    """Short name used in the plan id and directory, e.g. llama3.1-70b."""
    model: ModelShape
    max_lr: float = Field(gt=0.0, le=1.0)
    """The base's own pretraining peak LR: the plan's peak LR is the promoted point's lr_fraction x this."""
    pretrain_tokens: float = Field(gt=0.0, le=1e15)
    """Tokens the base was pretrained on: a ladder's law counts the full run's continued pretraining in them, and
    a ladder's rungs continue-pretrain on the same share of their own (docs/ladder.md)."""
    source: str = ""
    """Where the shape and max_lr come from (paper, model card), shown in the summary."""


_LLAMA3_PAPER = "Llama 3 Herd of Models (arXiv:2407.21783) Table 3; Meta's Llama 3.1 config.json"

LLAMA_3_1_405B = ModelShape(
    num_layers=126,
    hidden_size=16384,
    ffn_hidden_size=53248,
    num_attention_heads=128,
    num_query_groups=8,
    vocab_size=128256,
    seq_length=8192,
)

PRESETS: dict[str, Target] = {
    target.name: target
    for target in (
        Target(name="llama3.1-8b", model=LLAMA_3_1_8B, max_lr=3e-4, pretrain_tokens=15e12, source=_LLAMA3_PAPER),
        Target(name="llama3.1-70b", model=LLAMA_3_1_70B, max_lr=1.5e-4, pretrain_tokens=15e12, source=_LLAMA3_PAPER),
        Target(name="llama3.1-405b", model=LLAMA_3_1_405B, max_lr=8e-5, pretrain_tokens=15.6e12, source=_LLAMA3_PAPER),
    )
}


def load_target(name_or_path: str) -> Target:
    """A preset by name, or a target YAML file (keys: the fields of Target)."""
    return preset_or_file(name_or_path, PRESETS, Target, kind="target")
