"""A trial's drop against the base's score: its sign, and its paired standard error, whose coverage is measured on
synthetic tasks whose true drop is known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from train_entry.downstream.scores import DownstreamScores, TaskDrop, TaskScore, paired_error, task_drops


def scores(examples: list[float], name: str = "t") -> DownstreamScores:
    mean = float(np.mean(examples))
    stderr = float(np.std(examples, ddof=1) / math.sqrt(len(examples)))
    return DownstreamScores(tasks={name: TaskScore(metric="acc", score=mean, stderr=stderr, examples=examples)},
                            seconds=1.0)  # fmt: skip


def test_a_drop_is_the_base_score_minus_the_trials_in_the_sense_of_forgetting():
    base, trial = scores([1, 1, 1, 0]), scores([1, 0, 1, 0])
    (drop,) = task_drops(base, trial).values()
    assert drop.drop == pytest.approx(0.25) and drop.base_score == 0.75 and drop.score == 0.5  # worse: above 0
    # paired: only the one example that changed moves the drop: sd of (0, 1, 0, 0) over sqrt(4)
    assert drop.drop_error == pytest.approx(np.std([0, 1, 0, 0], ddof=1) / 2)
    unscored = task_drops(None, trial)["t"]
    assert unscored.drop is None and unscored.base_score is None and unscored.score == 0.5


def test_a_drop_that_is_not_the_difference_is_refused():
    with pytest.raises(ValueError, match="drop is base_score - score"):
        TaskDrop(metric="acc", score=0.5, stderr=None, base_score=0.75, drop=0.1)
    with pytest.raises(ValueError, match="together or not at all"):
        TaskDrop(metric="acc", score=0.5, stderr=None, base_score=0.75)


def test_pairing_needs_the_same_examples():
    assert paired_error([1.0, 0.0], [1.0]) is None and paired_error([1.0], [0.0]) is None


def test_the_paired_errors_90_percent_interval_covers_the_true_drop_about_90_percent_of_the_time():
    """Tasks of 400 examples drawn from a population where the base answers 60 % and the trial loses 20 % of the base's
    right answers and gains 10 % of its wrong ones: a true drop of 0.6 * 0.2 - 0.4 * 0.1 = 0.08."""
    rng = np.random.default_rng(0)
    truth, covered = 0.6 * 0.2 - 0.4 * 0.1, []
    for _ in range(400):
        base = rng.random(400) < 0.6
        trial = np.where(base, rng.random(400) >= 0.2, rng.random(400) < 0.1)
        drop = task_drops(scores(base.astype(float).tolist()), scores(trial.astype(float).tolist()))["t"]
        covered.append(abs(drop.drop - truth) <= 1.6449 * drop.drop_error)
    assert 0.86 <= np.mean(covered) <= 0.94
