"""What a promotion request may set: target, cluster, tokens, batch, corpus prefixes, checkpoints,
layout constraints and model assumptions. A `--config` YAML maps onto PromotionConfig one to one;
command-line flags override it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field, ValidationInfo, field_validator

from sweep.promote.errors import PromotionError
from sweep.promote.estimate.assumptions import Assumptions
from sweep.promote.estimate.clusters import DEFAULT_CLUSTER
from sweep.promote.estimate.layout import LayoutRequest
from sweep.target.full_run import (
    MOST_BATCH_TOKENS,
    MOST_TOKENS,
    REFERENCE_BATCH_TOKENS,
    TOKENS,
    WARMUP_FRACTION,
    FullRun,
)
from sweep.target.load import TARGET_FORMS
from sweep.target.presets import check_value
from train_entry.config import StrictConfig
from train_entry.megatron.config import check_split


class DataPrefix(StrictConfig):
    """One Megatron indexed dataset (the path of its .bin/.idx pair without the suffix)."""

    prefix: str = Field(min_length=1)
    tokens: float | None = Field(None, gt=0, le=MOST_TOKENS)
    """Its token count; when every prefix of a side has one, the side's weight is split by them,
    otherwise equally. At most MOST_TOKENS (a dataset of 10^15 tokens is petabytes), so the side's sum is finite and
    no share of it rounds to zero."""


class ValidationPrefixes(StrictConfig):
    """Held-out text per side, one Megatron indexed dataset each, evaluated apart: the sweep's own validation
    prefixes when its spec has them, else the team's (a side left out gets a marked placeholder)."""

    general: str | None = Field(None, min_length=1)
    domain: str | None = Field(None, min_length=1)
    non_english: str | None = Field(None, min_length=1)
    """Measured only when the promoted point has a non-English share."""


class PromotionData(StrictConfig):
    """The full run's corpora, per side of the mix; a side left empty gets a marked placeholder."""

    general: list[DataPrefix] = Field(default_factory=list)
    """English general-domain (replay) text."""
    non_english: list[DataPrefix] = Field(default_factory=list)
    """Non-English general text (the spec's data.non_english.share of the general side)."""
    domain: list[DataPrefix] = Field(default_factory=list)
    tokenizer: str | None = None
    """The base's Hugging Face tokenizer directory, on the cluster's file system."""
    split: Annotated[str, AfterValidator(check_split)] = "99,1,0"
    """Train/valid/test split of each indexed dataset, in Megatron's "a,b,c" form."""
    valid: ValidationPrefixes = ValidationPrefixes()
    """The validation sets domain_gain and forgetting are measured on (sweep/promote/plan/validation.py)."""


class PromotionCheckpoint(StrictConfig):
    base_dir: str | None = None
    """The base model as a Megatron distributed checkpoint; loaded as weights only (fresh optimizer,
    iteration 0) while save_dir holds no checkpoint."""
    save_dir: str | None = None
    """The run's own checkpoints; a relaunch resumes from the latest one there (optimizer, iteration)."""
    interval_hours: float = Field(2.0, gt=0)
    """Predicted wall-clock hours between saves: bounds the work a failure costs to about this."""


class PromotionConfig(StrictConfig):
    target: str | None = None
    """A preset's name (one of sweep.target.families.registry.PRESETS, listed by `sweep promote plan --help`), a
    Hugging Face model directory (its config.json), or a target YAML file; required."""
    max_lr: float | None = Field(None, gt=0.0, le=1.0)
    """The base's own pretraining peak LR, in place of the target's: needed where the target has none (a Hugging
    Face directory, or a preset whose makers do not publish it)."""
    pretrain_tokens: float | None = Field(None, gt=0.0, le=1e15)
    """Tokens the base was pretrained on, in place of the target's: a ladder's promotion needs it."""
    cluster: str = DEFAULT_CLUSTER
    """A preset's name (one of sweep.promote.estimate.clusters.PRESETS, listed by `sweep promote plan --help`) or a cluster
    YAML file."""
    transformer_engine: bool | None = None
    """Whether the cluster's image has Transformer Engine, overriding the cluster's own transformer_engine;
    None keeps the cluster's."""
    tokens: int = Field(TOKENS, gt=0, le=MOST_TOKENS)
    """Training tokens of the full run (the reference recipe: 1 T)."""
    global_batch_tokens: int = Field(REFERENCE_BATCH_TOKENS, gt=0, le=MOST_BATCH_TOKENS)
    """Tokens per optimizer step (the reference recipe: 1440 sequences x 8192 = 11.8 M); a multiple
    of the target's sequence length."""
    warmup_fraction: float = Field(WARMUP_FRACTION, ge=0.0, lt=1.0)
    """Share of the iterations spent warming the LR up from 0: re-warming a converged base needs a
    few hundred steps at this batch (~850 of ~85 000 here) before the peak is safe."""
    data: PromotionData = PromotionData()
    checkpoint: PromotionCheckpoint = PromotionCheckpoint()
    layout: LayoutRequest = LayoutRequest()
    assumptions: Assumptions = Assumptions()

    def require_target(self) -> str:
        """The target; PromotionError naming its three forms when none is given, before anything is read or planned."""
        if self.target is None:
            raise PromotionError(f"no target: --target is required (or target: in the --config file): {TARGET_FORMS}")
        return self.target

    @property
    def full_run(self) -> FullRun:
        """The full run's length and warmup as the request sets them."""
        return FullRun(
            tokens=self.tokens, global_batch_tokens=self.global_batch_tokens, warmup_fraction=self.warmup_fraction
        )

    @field_validator("target", "cluster")
    @classmethod
    def _file_beside_config(cls, value: str | None, info: ValidationInfo) -> str | None:
        # A YAML file or model directory named in a --config file is relative to that file, like paths in a spec.
        if value is not None:
            check_value(value, kind=info.field_name or "value")
        root = (info.context or {}).get("root")
        if value is None or root is None or Path(value).is_absolute():
            return value
        beside = Path(root) / value
        return str(beside) if value.endswith((".yaml", ".yml")) or (beside / "config.json").is_file() else value
