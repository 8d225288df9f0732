"""The target as the loss law and a ladder see it: its N, its base's pretraining tokens, the full run's tokens and
the mean of its LR schedule (TargetScale), and the ratios a ladder matches its rungs to (LadderTarget)."""

from __future__ import annotations

from pydantic import Field

from train_entry.config import StrictConfig

MIN_PARAMETERS = 1e3
MAX_PARAMETERS = 1e13
"""N between a thousand and ten trillion non-embedding parameters: any real model, far from a typo in the exponent."""
MAX_TOKENS = 1e15
"""A quadrillion continued-pretraining tokens: a hundred times the largest pretraining runs."""


class TargetScale(StrictConfig):
    """Where the optimum is predicted: a model size, its pretraining and continued-pretraining tokens and its LR
    schedule's mean."""

    name: str = Field(min_length=1, max_length=200)
    parameters: float = Field(ge=1.0, le=MAX_PARAMETERS)
    """N, non-embedding, as sweep.scale counts it."""
    tokens: float = Field(gt=0.0, le=MAX_TOKENS)
    """D: the run's continued-pretraining tokens."""
    pretrain_tokens: float = Field(gt=0.0, le=MAX_TOKENS)
    """The base's own pretraining tokens."""
    lr_mean: float = Field(gt=0.0, le=1.0)
    """The mean of the run's LR schedule over the whole run, as a fraction of its peak."""

    @property
    def time(self) -> float:
        """lr_mean x tokens / pretrain_tokens: the LR area at lr_fraction 1."""
        return self.lr_mean * self.tokens / self.pretrain_tokens


class Ratios(StrictConfig):
    """The dimensionless ratios that make a rung like the target: the report shows them side by side."""

    pretrain_tokens_per_parameter: float = Field(gt=0.0)
    tokens_per_parameter: float = Field(gt=0.0)
    """Continued-pretraining tokens per parameter (a trial's, or the full run's)."""
    cpt_share: float = Field(gt=0.0)
    """Continued-pretraining tokens over the base's pretraining tokens."""
    steps: int = Field(gt=0)
    """Optimizer steps of the continued pretraining."""
    warmup_share: float = Field(ge=0.0, le=1.0)
    """Warmup steps over steps."""


class LadderTarget(StrictConfig):
    """The target as a ladder is designed for it: the law's target scale and the full run's steps."""

    scale: TargetScale
    steps: int = Field(gt=0)
    warmup_steps: int = Field(ge=0)

    @property
    def cpt_share(self) -> float:
        return self.scale.tokens / self.scale.pretrain_tokens

    @property
    def ratios(self) -> Ratios:
        scale = self.scale
        return Ratios(
            pretrain_tokens_per_parameter=scale.pretrain_tokens / scale.parameters,
            tokens_per_parameter=scale.tokens / scale.parameters,
            cpt_share=self.cpt_share,
            steps=self.steps,
            warmup_share=self.warmup_steps / self.steps,
        )
