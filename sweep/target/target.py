"""A target: the model a plan trains at full scale (its shape) and its base's own pretraining facts (peak LR,
tokens), as a family's preset, a target YAML file or a Hugging Face directory's config.json gives them."""

from __future__ import annotations

from pydantic import Field

from sweep.target.presets import Name
from train_entry.config import StrictConfig
from train_entry.megatron.config import ModelShape


class Target(StrictConfig):
    """A full-scale model: what the plan's layout, memory and FLOPs are computed for."""

    name: Name
    """Short name used in the plan id and directory, e.g. llama3.1-70b."""
    model: ModelShape
    max_lr: float | None = Field(None, gt=0.0, le=1.0)
    """The base's own pretraining peak LR: the plan's peak LR is the promoted point's lr_fraction x this. None where
    its makers do not publish it: a plan then needs it given (--max-lr)."""
    pretrain_tokens: float | None = Field(None, gt=0.0, le=1e15)
    """Tokens the base was pretrained on: a ladder's law counts the full run's continued pretraining in them, and
    a ladder's rungs continue-pretrain on the same share of their own (docs/ladder.md). None where unpublished: a
    ladder's promotion then needs it given (--pretrain-tokens)."""
    source: str = ""
    """Where the shape and max_lr come from (paper, model card), shown in the summary."""
