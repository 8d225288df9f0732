"""What one proxy trial is given and what it gives back. Plain data: round-trips to JSON."""

from __future__ import annotations

import enum
import math
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ConfigDict, Field, model_validator

from train_entry.config import Seed, StrictConfig
from train_entry.mix import Mix
from train_entry.optimizer import OptimizerConfig

if TYPE_CHECKING:
    import numpy as np

TRIAL_CONFIG_JSON = "trial_config.json"
"""Written by a trial into its output directory before it trains: the config it is a function of."""
RESULT_JSON = "result.json"
"""Written by a trial into its output directory when it ends."""


class ProxyConfig(OptimizerConfig):
    """One proxy run: the continued-pretraining budget every trial of a sweep gets, and its
    optimizer recipe (warmup_steps, schedule, min_lr_ratio, weight_decay, grad_clip).

    Upper bounds keep a typo from booking a machine for a year; each is far above any proxy.
    """

    steps: int = Field(gt=0, le=1_000_000)
    seq_len: int = Field(ge=8, le=131_072)
    batch_size: int = Field(gt=0, le=65_536)
    """Sequences per optimizer step."""
    eval_interval: int = Field(gt=0)
    """Steps between evaluations; each one is reported (and may be pruned)."""
    eval_sequences: int = Field(64, gt=0, le=100_000)
    """Sequences of seq_len tokens in each fixed validation set (domain and general)."""
    divergence_factor: float = Field(3.0, gt=1.0, le=1e6)
    """A training loss above this multiple of the first step's loss ends the trial as diverged."""
    seed: Seed = 0
    """Fixes the sweep's validation sets, and is every trial's training seed unless the trial names its own."""

    @model_validator(mode="after")
    def _steps_fit(self) -> ProxyConfig:
        if self.warmup_steps >= self.steps:
            raise ValueError(f"warmup_steps must be below steps, got {self.warmup_steps=}, {self.steps=}")
        if self.eval_interval > self.steps:
            raise ValueError(f"eval_interval may not exceed steps, got {self.eval_interval=}, {self.steps=}")
        return self

    def checkpoint_steps(self, checkpoint_interval: int | None) -> int:
        """Steps between a sharded trial's checkpoints: `checkpoint_interval` (execution's), else every evaluation."""
        return checkpoint_interval or self.eval_interval


class CorpusPrefixes(StrictConfig):
    """megatron-core indexed datasets (path prefixes of .bin/.idx pairs) of one split."""

    general: str
    domain: str
    non_english: str | None = None


MAX_LOSS = 100.0
"""Nats per token: a uniform guess over a 10^43-token vocabulary; anything above is a unit error."""
MIN_LOSS = 0.01
"""Nats per token, a perplexity of 1.01: no model's loss on held-out text is lower; a figure read from outside (a
full run's log, a table of runs) that is lower is a unit error (bits for nats, a sum for a mean) or a damaged line,
and a base loss near zero makes every ratio to it huge."""


class BaseLosses(StrictConfig):
    """The base's own losses on the fixed validation sets: the reference for gain and forgetting."""

    domain_loss: float = Field(gt=0.0, le=MAX_LOSS)
    """Nats per token; above zero, since domain_gain divides by it."""
    general_loss: float = Field(gt=0.0, le=MAX_LOSS)
    """Nats per token; above zero, since forgetting divides by it."""
    domain_sequences: list[float] = Field(default_factory=list, max_length=100_000)
    """Each domain validation sequence's mean token loss under the base, in the set's order (empty: not measured
    sequence by sequence): with a trial's own, how much another draw of text would move its figures (TextError)."""
    general_sequences: list[float] = Field(default_factory=list, max_length=100_000)


class SequenceLosses(StrictConfig):
    """Each validation sequence's mean token loss at one evaluation, in the sets' order."""

    # A measurement, not a setting: a diverging trial's losses may come out non-finite, and are kept as they are.
    model_config = ConfigDict(allow_inf_nan=True)

    domain: list[float] = Field(max_length=100_000)
    general: list[float] = Field(max_length=100_000)


class TextError(StrictConfig):
    """How much a trial's final domain_gain and forgetting would move measured on another draw of validation text of
    the same size: the standard error of each over the sequences, paired with the base's losses on the same
    sequences (each figure is a ratio of two means; its delta-method variance is var(x - r y) / (n mean(y)^2))."""

    domain_gain: float = Field(ge=0.0)
    forgetting: float = Field(ge=0.0)

    @classmethod
    def of(cls, base: BaseLosses, final: SequenceLosses) -> TextError | None:
        """None when the base's or the trial's losses were not kept per sequence, or are not the same sequences."""
        pairs = ((final.domain, base.domain_sequences), (final.general, base.general_sequences))
        if any(len(trial) != len(reference) or len(trial) < 2 for trial, reference in pairs):
            return None
        if not all(math.isfinite(loss) for losses in (*pairs[0], *pairs[1]) for loss in losses):
            return None  # a diverged trial: no error to speak of
        return cls(domain_gain=_ratio_error(*pairs[0]), forgetting=_ratio_error(*pairs[1]))


def _ratio_error(trial: list[float], base: list[float]) -> float:
    """Standard error of mean(trial) / mean(base) over paired sequences (1 - domain_gain, or 1 + forgetting)."""
    n = len(trial)
    ratio = math.fsum(trial) / math.fsum(base)
    residuals = [t - ratio * b for t, b in zip(trial, base)]
    mean = math.fsum(residuals) / n
    variance = math.fsum((r - mean) ** 2 for r in residuals) / (n - 1)
    return math.sqrt(variance / n) / (math.fsum(base) / n)


class TrialConfig(StrictConfig):
    """Everything one proxy trial depends on; a trial is a pure function of it."""

    lr_fraction: float = Field(gt=0.0, le=1.0)
    mix: Mix
    base_dir: str
    """A Hugging Face causal-LM directory (the built-in base is materialised as one)."""
    tokenizer_dir: str
    max_lr: float = Field(gt=0.0)
    base_losses: BaseLosses
    train: CorpusPrefixes
    valid: CorpusPrefixes
    non_english_share: float = Field(0.0, ge=0.0, lt=1.0)
    proxy: ProxyConfig
    threads: int = Field(1, ge=1)
    """torch intra-op threads on CPU: the trial's CPU allotment (each worker's, in a sharded trial)."""
    activation_checkpointing: bool = False
    """Keep only each decoder layer's input and recompute the rest in the backward: about a third more compute, for
    a trial whose activations at the proxy's batch and sequence length would not fit beside its weights."""
    compile: bool = False
    """torch.compile each decoder layer and the loss (train_entry.model.ready_layers): faster steps on a GPU after
    a compilation of seconds at the trial's start; the same numbers to bf16's rounding."""
    checkpoint_interval: int | None = Field(None, gt=0)
    """A sharded trial's steps between the checkpoints a retry resumes from (train_entry.sharded.checkpoint); a
    multiple of proxy.eval_interval, since a checkpoint follows its evaluation's report. Default: every evaluation.
    Each writes 12 bytes per parameter."""
    valid_draw: int = Field(0, ge=0)
    """Which of the sweep's disjoint validation draws `valid` and `base_losses` are: 0 for the search trials and their
    replicates, 1 + r for the confirmation trials of round r, measured on text no other trial was."""
    output_dir: str
    """Where the trial writes its resolved config, index caches and metrics."""
    seed: Seed
    """Seeds the trial's training: torch (any newly initialised weights, dropout) and the blend's sample
    order. Left out, proxy.seed, which a sweep's main trials use; a replicate re-runs a point with
    another. The validation sets stay on proxy.seed whatever this is, so every trial of a sweep is
    measured on the same held-out sequences."""

    @model_validator(mode="before")
    @classmethod
    def _seed_defaults_to_the_proxy_seed(cls, data: Any) -> Any:
        # Filled in before validation, so that the written config names the seed it trained with.
        if not isinstance(data, dict) or data.get("seed") is not None:
            return data
        proxy = data.get("proxy")
        if isinstance(proxy, ProxyConfig):
            return {**data, "seed": proxy.seed}
        if isinstance(proxy, dict):
            return {**data, "seed": proxy.get("seed", ProxyConfig.model_fields["seed"].default)}
        return data  # no proxy: its own error says so

    @model_validator(mode="after")
    def _checkpoints_follow_evaluations(self) -> TrialConfig:
        interval = self.checkpoint_interval
        if interval is not None and interval % self.proxy.eval_interval:
            raise ValueError(
                f"checkpoint_interval must be a multiple of proxy.eval_interval, got {interval=}, "
                f"{self.proxy.eval_interval=}"
            )
        return self

    @property
    def peak_lr(self) -> float:
        return self.lr_fraction * self.max_lr

    @property
    def checkpoint_steps(self) -> int:
        """Steps between a sharded trial's checkpoints."""
        return self.proxy.checkpoint_steps(self.checkpoint_interval)


class TrialStatus(str, enum.Enum):
    COMPLETED = "completed"
    STOPPED = "stopped"
    """The report callback asked to stop (pruned, or guarded by the caller)."""
    DIVERGED = "diverged"


Losses = TypeVar("Losses", float, "np.ndarray")
"""One loss, or a numpy column of them (the law's table): the two formulas hold elementwise."""


def domain_gain(domain_loss: Losses, base_domain_loss: Losses) -> Losses:
    """How much less the domain loss is than the base's, as a share of the base's (DESIGN.md's vocabulary); every
    caller computes it here."""
    return 1.0 - domain_loss / base_domain_loss


def forgetting(general_loss: Losses, base_general_loss: Losses) -> Losses:
    """How much more the general loss is than the base's, as a share of the base's; every caller computes it here."""
    return general_loss / base_general_loss - 1.0


class Metrics(StrictConfig):
    """One evaluation, as passed to report()."""

    # A measurement, not a setting: a loss may come out non-finite, and the trial reports it as it is.
    model_config = ConfigDict(allow_inf_nan=True)

    step: int
    tokens_seen: int
    domain_loss: float
    general_loss: float
    domain_gain: float
    """1 - domain_loss / base_domain_loss (higher is better): `domain_gain`."""
    forgetting: float
    """general_loss / base_general_loss - 1 (lower is better): `forgetting`."""
    train_loss: float
    lr: float

    @classmethod
    def measure(cls, *, base: BaseLosses, domain_loss: float, general_loss: float, **rest: Any) -> Metrics:
        return cls(
            domain_loss=domain_loss,
            general_loss=general_loss,
            domain_gain=domain_gain(domain_loss, base.domain_loss),
            forgetting=forgetting(general_loss, base.general_loss),
            **rest,
        )


class TrialUsage(StrictConfig):
    """A trial's training time and peak GPU memory (this worker's, rank 0's in a sharded trial)."""

    train_seconds: float = Field(ge=0.0)
    """Wall seconds of the training steps: the time in training less its evaluations, their reports and a sharded
    trial's checkpoints; no start-up (data, model loading) either."""
    train_tokens: int = Field(ge=0)
    """Tokens those steps trained on (all workers'): the trial's tokens_seen, less those of the steps a sharded trial
    resumed after, which another attempt timed. Over train_seconds, the trial's training throughput."""
    peak_memory_gb: float | None = Field(None, ge=0.0)
    """torch.cuda.max_memory_reserved over training and evaluation, in GB (1e9 bytes): what the caching allocator
    held at its most, fragmentation included, which no other process on the GPU could have; None on CPU."""


class TrialResult(StrictConfig):
    status: TrialStatus
    reason: str | None = None
    """Why a trial diverged or stopped."""
    steps: int
    """Optimizer steps taken."""
    tokens_seen: int
    wall_seconds: float
    history: list[Metrics]
    """Every evaluation, in order; the last is the trial's final measurement."""
    sequence_losses: SequenceLosses | None = None
    """The final evaluation's losses sequence by sequence (None: no evaluation ran in this process)."""
    text_error: TextError | None = None
    """How much the final figures would move on another draw of validation text (None: not measured per sequence)."""
    usage: TrialUsage | None = None
    """The training steps' time and tokens and the GPU's peak memory (None: a result no training made, a test's)."""

    @property
    def final(self) -> Metrics | None:
        return self.history[-1] if self.history else None
