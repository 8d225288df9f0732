"""What one proxy trial is given and what it gives back. Plain data: round-trips to JSON."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ConfigDict, Field, model_validator

from train_entry.config import Seed, StrictConfig
from train_entry.downstream.scores import DownstreamScores, TaskDrop
from train_entry.downstream.tasks import DownstreamPlan
from train_entry.mix import Mix
from train_entry.optimizer import OptimizerConfig, peak_lr
from train_entry.text_losses import TextError, TextLosses

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
    """Windows of seq_len tokens per side (domain and general) that each interim evaluation scores, cut from the
    validation pool's documents, one per document first (train_entry.data.windows): what the pruner and the
    forgetting guard read. A trial's final figures are measured on the whole pool (or its confirmation draw)."""
    divergence_factor: float = Field(3.0, gt=1.0, le=1e6)
    """A training loss above this multiple of the first step's loss ends the trial as diverged."""
    seed: Seed = 0
    """Every trial's training seed unless the trial names its own (the validation texts are fixed by the corpus
    alone: train_entry.data.draws)."""

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
    """The base's own losses on one validation text: the reference for gain and forgetting measured on it."""

    domain_loss: float = Field(gt=0.0, le=MAX_LOSS)
    """Nats per token; above zero, since domain_gain divides by it."""
    general_loss: float = Field(gt=0.0, le=MAX_LOSS)
    """Nats per token; above zero, since forgetting divides by it."""
    documents: TextLosses | None = None
    """The same, document by document (None: not measured so, as a full run's base): with a trial's own on the same
    documents, how much another text of the kind would move its figures (TextError)."""


class TrialConfig(StrictConfig):
    """Everything one proxy trial depends on; a trial is a pure function of it."""

    lr_fraction: float = Field(gt=0.0, le=1.0)
    mix: Mix
    base_dir: str
    """A Hugging Face causal-LM directory (the built-in base is materialised as one)."""
    tokenizer_dir: str
    max_lr: float = Field(gt=0.0)
    base_losses: BaseLosses
    """The base's on the interim windows (ProxyConfig.eval_sequences of the pool's): what each evaluation's
    domain_gain and forgetting are relative to."""
    final_base_losses: BaseLosses
    """The base's on the trial's validation text (the pool, or its confirmation draw), document by document: what its
    final figures are relative to."""
    train: CorpusPrefixes
    valid: CorpusPrefixes
    """The validation pool: the interim windows are cut from it, and a search trial's final figures measure all of
    it."""
    draw_valid: CorpusPrefixes | None = None
    """A confirmation trial's draw, its final figures' text (valid_draw above 0); None for the pool's trials."""
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
    """The validation text of the trial's final figures: 0, the pool, for the search trials and their replicates;
    1 + r, draw 1 + r, for the confirmation trials of round r, measured on text no other trial was."""
    output_dir: str
    """Where the trial writes its resolved config, index caches and metrics."""
    downstream: DownstreamPlan | None = None
    """Benchmark tasks the trial's model is scored on when it completes (evaluation.downstream); None: none."""
    downstream_base: DownstreamScores | None = None
    """The base's scores on those tasks, what the trial's drops are relative to; None: the base is not scored."""
    seed: Seed
    """Seeds the trial's training: torch (any newly initialised weights, dropout) and the blend's sample
    order. Left out, proxy.seed, which a sweep's main trials use; a replicate re-runs a point with
    another. The validation texts are the same whatever this is, so every trial of a sweep is measured on the
    same held-out documents."""

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
    def _a_draw_for_a_confirmation(self) -> TrialConfig:
        if (self.draw_valid is not None) != (self.valid_draw > 0):
            raise ValueError(
                f"draw_valid is a confirmation trial's text, given with valid_draw above 0 and only then, got "
                f"{self.valid_draw=} and draw_valid {'set' if self.draw_valid else 'None'}"
            )
        return self

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
        return peak_lr(self.lr_fraction, max_lr=self.max_lr)

    @property
    def final_valid(self) -> CorpusPrefixes:
        """The text of the trial's final figures."""
        return self.draw_valid if self.draw_valid is not None else self.valid

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
    eval_seconds: float = Field(0.0, ge=0.0)
    """Wall seconds of its evaluations: the interim ones (and their reports) and the final figures on its text.
    Beside train_seconds, what measuring the trial costs against training it."""
    downstream_seconds: float = Field(0.0, ge=0.0)
    """Wall seconds of its downstream evaluation (lm-evaluation-harness on its tasks, after its final figures); 0
    without one. Beside train_seconds, what the benchmark scores cost."""
    peak_memory_gb: float | None = Field(None, ge=0.0)
    """torch.cuda.max_memory_reserved over training and evaluation, in GB (1e9 bytes): what the caching allocator
    held at its most, fragmentation included, which no other process on the GPU could have; None on CPU."""


class Figures(StrictConfig):
    """A trial's figures on its validation text (the pool, or its confirmation draw) at its last step: what the
    choice reads, with the text they were measured on and their text error over its documents."""

    # A measurement, not a setting: a loss may come out non-finite, and the trial reports it as it is.
    model_config = ConfigDict(allow_inf_nan=True)

    text: str = Field(min_length=1, max_length=32)
    """"pool", or "draw 1 + r" for confirmation round r (train_entry.data.draws.text_name)."""
    step: int = Field(ge=0)
    domain_loss: float
    general_loss: float
    domain_gain: float
    forgetting: float
    text_error: TextError | None
    """How much they would move on another text of the same kind and size (None: fewer than two documents, or a
    non-finite loss)."""
    documents: TextLosses
    """The losses document by document."""

    @classmethod
    def measure(cls, *, text: str, step: int, base: BaseLosses, losses: TextLosses) -> Figures:
        domain_loss, general_loss = losses.domain.loss, losses.general.loss
        return cls(
            text=text,
            step=step,
            domain_loss=domain_loss,
            general_loss=general_loss,
            domain_gain=domain_gain(domain_loss, base.domain_loss),
            forgetting=forgetting(general_loss, base.general_loss),
            text_error=TextError.of(base.documents, losses) if base.documents is not None else None,
            documents=losses,
        )


class TrialResult(StrictConfig):
    status: TrialStatus
    reason: str | None = None
    """Why a trial diverged or stopped."""
    steps: int
    """Optimizer steps taken."""
    tokens_seen: int
    wall_seconds: float
    history: list[Metrics]
    """Every interim evaluation, in order (the pool's interim windows, ProxyConfig.eval_sequences)."""
    documents: list[TextLosses] = Field(default_factory=list)
    """Each interim evaluation's losses document by document, in the order of `history`."""
    figures: Figures | None = None
    """The figures on the trial's validation text when it ended, completed or stopped (None: it diverged, or never
    evaluated)."""
    usage: TrialUsage | None = None
    """The training steps' time and tokens and the GPU's peak memory (None: a result no training made, a test's)."""
    downstream: dict[str, TaskDrop] | None = None
    """A completed trial's score on each downstream task, against the base's (None: no evaluation.downstream, or the
    trial did not complete)."""

    @model_validator(mode="after")
    def _documents_follow_history(self) -> TrialResult:
        if self.documents and len(self.documents) != len(self.history):
            raise ValueError(
                f"documents are one per evaluation of history, got {len(self.documents)} for {len(self.history)}"
            )
        if self.status is TrialStatus.COMPLETED and self.figures is None:
            raise ValueError("a completed trial carries its figures on its validation text, not null")
        return self

    @property
    def final(self) -> Metrics | None:
        """The last interim evaluation."""
        return self.history[-1] if self.history else None

    @property
    def text_error(self) -> TextError | None:
        """The final figures' text error."""
        return self.figures.text_error if self.figures is not None else None
