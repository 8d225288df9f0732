"""The forgetting watch: each full-run evaluation held against the plan's predicted forgetting.

The plan carries the predicted trajectory of forgetting against training tokens with its upper bound
(PredictedTrajectory). The running job feeds every evaluation's domain and general losses, with the base's
losses at iteration 0, to ForgettingWatch: it measures domain_gain and forgetting in the proxies' definitions
(train_entry.trial_config.Metrics.measure) and trips when measured forgetting exceeds the upper bound at
OVERSHOOTS_TO_TRIP evaluations in a row (one noisy evaluation is not a trend). Past the trajectory's last
point there is no credible prediction, and the watch says so instead of holding the run to the last bound.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from pydantic import Field, model_validator

from train_entry.config import StrictConfig
from train_entry.trial_config import Metrics

OVERSHOOTS_TO_TRIP = 2
"""Evaluations in a row above the upper bound before the watch warns (and, when asked, stops the job)."""


class PredictedPoint(StrictConfig):
    tokens: float = Field(ge=0)
    """Training tokens of the full run at this point."""
    forgetting: float
    forgetting_upper: float
    """Upper end of the prediction's interval (its level is the trajectory's `level`)."""


class PredictedTrajectory(StrictConfig):
    """Predicted forgetting against tokens for the promoted point, with its interval."""

    source: str = Field(min_length=1)
    """Where it comes from, said in words: the ladder's law, or the proxies' curves scaled by tokens
    (an extrapolation)."""
    level: float = Field(gt=0, lt=1)
    """Coverage of the interval, e.g. 0.9."""
    points: list[PredictedPoint] = Field(min_length=2, max_length=10_000)

    @model_validator(mode="after")
    def _ordered(self) -> PredictedTrajectory:
        tokens = [point.tokens for point in self.points]
        if any(later <= earlier for earlier, later in itertools.pairwise(tokens)):
            raise ValueError(f"predicted points must have strictly increasing tokens, got {tokens}")
        if any(point.forgetting_upper < point.forgetting for point in self.points):
            raise ValueError("each predicted point's forgetting_upper must be at least its forgetting")
        return self

    def upper_at(self, tokens: float) -> float | None:
        """The upper bound at `tokens`, linear between points; None outside the predicted range."""
        first, last = self.points[0].tokens, self.points[-1].tokens
        if not first <= tokens <= last:
            return None
        return float(np.interp(tokens, [p.tokens for p in self.points], [p.forgetting_upper for p in self.points]))


@dataclass(frozen=True)
class WatchedEvaluation:
    metrics: Metrics
    upper: float | None
    """The predicted upper bound at this evaluation's tokens; None where there is no credible prediction."""
    overshoots: int
    """Evaluations in a row, up to this one, whose forgetting exceeded the upper bound."""

    @property
    def tripped(self) -> bool:
        return self.overshoots >= OVERSHOOTS_TO_TRIP

    def line(self) -> str:
        """The evaluation in one line, every figure from this record."""
        measured = (
            f"iteration {self.metrics.step}, {self.metrics.tokens_seen:,} tokens: forgetting "
            f"{self.metrics.forgetting:.4f}, domain_gain {self.metrics.domain_gain:.4f}"
        )
        if self.upper is None:
            return f"{measured}; no credible prediction at these tokens (outside the predicted trajectory)"
        if not self.overshoots:
            return f"{measured}, within the predicted upper bound {self.upper:.4f}"
        warning = "WARNING: " if self.tripped else ""
        return (
            f"{warning}{measured} exceeds the predicted upper bound {self.upper:.4f} "
            f"({self.overshoots} evaluation(s) in a row; the watch trips at {OVERSHOOTS_TO_TRIP})"
        )


class ForgettingWatch:
    """Holds each evaluation of one run against the prediction; the count of overshoots in a row is its state."""

    def __init__(self, prediction: PredictedTrajectory) -> None:
        self.prediction = prediction
        self.overshoots = 0

    def judge(self, metrics: Metrics) -> WatchedEvaluation:
        """`metrics` (measured against the base's losses) held to the predicted upper bound at its tokens."""
        upper = self.prediction.upper_at(metrics.tokens_seen)
        # A non-finite forgetting is an overshoot: a diverged run has certainly forgotten more than predicted.
        over = upper is not None and not metrics.forgetting <= upper
        self.overshoots = self.overshoots + 1 if over else 0
        return WatchedEvaluation(metrics=metrics, upper=upper, overshoots=self.overshoots)
