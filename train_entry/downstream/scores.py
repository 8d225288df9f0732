"""What a downstream evaluation gives back (a score per task with its standard error and each example's value), and
a trial's drop against the base's on the same examples, in the sense of forgetting: positive is worse."""

from __future__ import annotations

import math

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from train_entry.config import StrictConfig

MAX_EXAMPLES = 1_000_000
"""Examples one task's score is kept for at most: a large benchmark (MMLU's test set is 14 k) is far below it."""


DOWNSTREAM_COLUMNS = {
    "score": "score", "score_stderr": "stderr", "base_score": "base_score", "drop": "drop", "drop_error": "drop_error",
}  # fmt: skip
"""A task's columns wherever a trial's figures are a flat table (trials.csv, W&B's summary), `<task>_<column>`, and
the TaskDrop field each holds."""


class TaskScore(StrictConfig):
    """One model's score on one task."""

    model_config = ConfigDict(allow_inf_nan=True)

    metric: str
    score: float
    """The metric's mean over the examples, as lm-evaluation-harness reports it (acc: a share, 0.01 = one point)."""
    stderr: float | None
    """lm-evaluation-harness's standard error of that mean over the examples (None: it gave none)."""
    examples: list[float] = Field(default_factory=list, max_length=MAX_EXAMPLES)
    """Each example's value, by example (doc_id) order: a drop's error is paired over them."""


class DownstreamScores(StrictConfig):
    """A model's scores on every task of a plan, and the wall seconds they took."""

    tasks: dict[str, TaskScore]
    seconds: float = Field(ge=0.0)


class TaskDrop(StrictConfig):
    """A trial's score on one task against the base's on the same examples."""

    model_config = ConfigDict(allow_inf_nan=True)

    metric: str
    score: float
    stderr: float | None
    base_score: float | None = None
    """None: the base was not scored (evaluation.downstream.base false)."""
    drop: float | None = None
    """base_score - score: how much the trial lost (negative: it gained), in the metric's units."""
    drop_error: float | None = None
    """Standard error of the drop over the examples, paired (each example's base value minus the trial's), as both
    are scored on the same examples; None with fewer than two examples or when the examples differ."""

    @model_validator(mode="after")
    def _drop_is_the_difference(self) -> TaskDrop:
        if self.drop is None or self.base_score is None:
            if (self.drop is None) != (self.base_score is None):
                raise ValueError("drop and base_score are given together or not at all")
            return self
        if math.isfinite(self.drop) and not math.isclose(self.drop, self.base_score - self.score, abs_tol=1e-9):
            raise ValueError(f"drop is base_score - score, got {self.drop=}, {self.base_score=}, {self.score=}")
        return self


def task_drops(base: DownstreamScores | None, trial: DownstreamScores) -> dict[str, TaskDrop]:
    """Each task's trial score against the base's (no drop where the base was not scored)."""
    return {name: _drop(base.tasks.get(name) if base else None, score) for name, score in trial.tasks.items()}


def _drop(base: TaskScore | None, trial: TaskScore) -> TaskDrop:
    if base is None:
        return TaskDrop(metric=trial.metric, score=trial.score, stderr=trial.stderr)
    return TaskDrop(
        metric=trial.metric,
        score=trial.score,
        stderr=trial.stderr,
        base_score=base.score,
        drop=base.score - trial.score,
        drop_error=paired_error(base.examples, trial.examples),
    )


def paired_error(base: list[float], trial: list[float]) -> float | None:
    """Standard error of mean(base - trial) over paired examples: the sample sd of the differences over sqrt(n)."""
    if len(base) != len(trial) or len(base) < 2:
        return None
    differences = np.asarray(base, dtype=float) - np.asarray(trial, dtype=float)
    return float(np.std(differences, ddof=1) / math.sqrt(len(differences)))
