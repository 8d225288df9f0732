"""The full run's evaluations as its log reports them, measured in the proxies' definitions and watched.

Each of Megatron-LM's validation lines (train_entry/megatron/megatron_log.py) gives one set's loss at one iteration;
once an iteration has every set, it is one evaluation: the domain set's loss, and the general loss as the proxies
measure it (train_entry/megatron/validation.py). The first complete evaluation at iteration 0 is the base's (Megatron-LM's
--skip-train launch, or the rehearsal's evaluation before its first step): domain_gain and forgetting are measured
against it. Until it is read, later evaluations are kept but not measured: there is nothing to measure them against.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from train_entry.config import StrictConfig
from train_entry.fullrun.watch import ForgettingWatch, PredictedTrajectory, WatchedEvaluation
from train_entry.megatron.megatron_log import parse_validation
from train_entry.megatron.validation import Side, check_sides, evaluation_metrics, side_losses
from train_entry.trial_config import BaseLosses


class WatchConfig(StrictConfig):
    """What the forgetting watch of one full run reads its log with and holds it to."""

    sets: list[Side] = Field(min_length=2, max_length=3)
    """The validation sets' sides in --valid-data-path order: a log line's set index is its place here."""
    non_english_share: float = Field(0.0, ge=0.0, lt=1.0)
    """Of the general side, as the proxies blended their general validation set."""
    tokens_per_iteration: int = Field(gt=0)
    """The global batch in tokens: an evaluation at iteration N is at N x this many training tokens."""
    prediction: PredictedTrajectory | None
    """None: no credible prediction, so the watch measures and reports but never trips."""
    stop_on_forgetting: bool = False
    """Checkpoint and stop the job when the watch trips (else a warning and a W&B alert only)."""

    @model_validator(mode="after")
    def _one_set_per_side(self) -> WatchConfig:
        check_sides(self.sets, self.non_english_share)
        return self


class Evaluations:
    """Reads a full run's log line by line; yields each evaluation, measured and held against the prediction."""

    def __init__(self, config: WatchConfig) -> None:
        self.config = config
        self.base: BaseLosses | None = None
        self._pending: dict[int, dict[int, float]] = {}
        self._watch = None if config.prediction is None else ForgettingWatch(config.prediction)
        self.watched: list[WatchedEvaluation] = []
        """Every evaluation measured so far, in order."""

    def read(self, line: str) -> WatchedEvaluation | BaseLosses | None:
        """The base's losses or a watched evaluation when `line` completes one; None otherwise."""
        found = parse_validation(line)
        if found is None or found.set_index >= len(self.config.sets):
            return None
        losses = self._pending.setdefault(found.iteration, {})
        losses[found.set_index] = found.loss
        if len(losses) < len(self.config.sets):
            return None
        del self._pending[found.iteration]
        ordered = [losses[index] for index in range(len(self.config.sets))]
        domain, general = side_losses(self.config.sets, ordered, self.config.non_english_share)
        if self.base is None:
            if found.iteration != 0:
                return None  # no base to measure against yet
            self.base = BaseLosses(domain_loss=domain, general_loss=general)
            return self.base
        tokens = found.iteration * self.config.tokens_per_iteration
        metrics = evaluation_metrics(
            self.base, step=found.iteration, tokens_seen=tokens, domain=domain, general=general
        )
        evaluation = (
            self._watch.judge(metrics) if self._watch else WatchedEvaluation(metrics=metrics, upper=None, overshoots=0)
        )
        self.watched.append(evaluation)
        return evaluation

    def restore(self, base: BaseLosses, overshoots: int) -> None:
        """Goes on from a checkpoint: the base read before it, and the overshoots in a row up to it."""
        self.base = base
        if self._watch is not None:
            self._watch.overshoots = overshoots
