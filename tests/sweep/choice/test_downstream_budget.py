"""The second budget on scripted rows (no training): a downstream task's drop bounds the pick by the same chance
constraint as forgetting, the sentence says which budget bound it, the best observed trial and the confirmation
respect it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scripted import trial_row as row

from sweep.choice.confirmation import Outcome, Setting, confirmation_state
from sweep.choice.downstream import budget_name
from sweep.choice.observed import best_observed
from reports.decision import comparison_lines
from sweep.choice.pick import PickSource, make_pick
from sweep.space import SearchSpace
from sweep.study.config import ConfirmationConfig, PickConfig
from train_entry.downstream.scores import TaskDrop
from train_entry.mix import MixRatio

MIXES = ["4:1", "2:1", "1:1", "1:2", "1:4"]
SPACE = SearchSpace.model_validate({"lr_fraction": {"low": 0.05, "high": 0.2, "log": True}, "mix": MIXES})
LOOSE = 1.0
"""A forgetting budget nothing here comes near: only the downstream budget can bind."""
TASK = "mc"
DROP_BUDGET = 0.05
ERROR = 0.005
"""Each trial's paired drop error over the task's examples."""


def true_gain(lr: float, share: float) -> float:
    return 0.1 + 0.05 * math.log(lr / 0.05) + 0.1 * share


def true_drop(lr: float) -> float:
    """Accuracy lost grows with the LR alone: at most 0.05 up to lr_fraction 0.1."""
    return 0.5 * lr


def scored(number, lr, mix, gain, forgetting, drop, **extra):
    base = 0.6
    task = TaskDrop(metric="acc", score=base - drop, stderr=0.01, base_score=base, drop=drop, drop_error=ERROR)
    return row(number, lr, mix, gain, forgetting, downstream={TASK: task}, **extra)


def rows(seed=0) -> list:
    rng = np.random.default_rng(seed)
    found = []
    for lr in np.geomspace(0.05, 0.2, 6):
        for mix in MIXES:
            share = MixRatio.parse(mix).domain_share
            found.append(scored(
                len(found), float(lr), mix, true_gain(lr, share) + rng.normal(0, 0.001), 0.01 * lr * share,
                true_drop(lr) + rng.normal(0, 0.002),
            ))  # fmt: skip
    return found


def pick(found, downstream_budget=None):
    budget = downstream_budget or {}
    return make_pick(
        found, space=SPACE, budget=LOOSE, config=PickConfig(), observed=best_observed(found, LOOSE, budget),
        downstream_budget=budget,
    )  # fmt: skip


def test_the_downstream_budget_bounds_the_pick_and_its_sentence_says_so():
    found = rows()
    free, bound = pick(found), pick(found, {TASK: DROP_BUDGET})
    assert free.point.lr_fraction == pytest.approx(0.2)  # no budget binds: the highest LR gains most
    assert "downstream" not in free.reason and free.downstream == {}
    assert bound.source is PickSource.SURROGATE
    assert true_drop(bound.point.lr_fraction) <= DROP_BUDGET  # the true drop at the pick is within the budget
    assert bound.point.lr_fraction < free.point.lr_fraction
    assert f"bound by {budget_name(TASK)}" in bound.reason and "forgetting budget" not in bound.reason
    chance = bound.probability_within_budget * bound.downstream[TASK].probability_within_budget
    assert chance >= 0.9
    assert bound.downstream[TASK].mean == pytest.approx(true_drop(bound.point.lr_fraction), abs=0.005)
    assert f"a drop on {TASK} within {DROP_BUDGET:g}" in bound.rule
    # the tried points that gain more were passed over by the drop budget, and the lines say so, not by the gain's rank
    (passed,) = [line for line in comparison_lines(bound) if line.startswith("gain measurably more")]
    assert "but within it and the downstream budget(s) 0.0" in passed and "ranks below" not in passed


def test_a_budget_no_candidate_can_meet_says_which_budget_held_them_back_and_falls_back_within_both():
    found = rows()
    tight = {TASK: 0.01}  # every trial drops 0.025 or more: no candidate, and no trial, is within it
    chosen = pick(found, tight)
    assert chosen.source is None and chosen.point is None
    assert chosen.reason.startswith("no candidate point is within the budgets with probability >= 0.9")
    assert f"bound by {budget_name(TASK)} ({len(found)}" not in chosen.reason  # counted over the grid, not the trials
    assert f"bound by {budget_name(TASK)}" in chosen.reason and "no completed trial is" in chosen.reason
    loosened = [*found, scored(len(found), 0.05, "4:1", 0.05, 0.0, 0.0)]  # one trial within it: the fallback
    fallback = pick(loosened, tight)
    assert fallback.source is PickSource.OBSERVED and f"trial {len(found)}" in fallback.reason
    assert (fallback.point.lr_fraction, fallback.point.mix) == (0.05, "4:1")


def test_the_best_observed_trial_respects_the_downstream_budget():
    found = rows()
    best = best_observed(found, LOOSE, {TASK: DROP_BUDGET})
    assert best.drop(TASK) <= DROP_BUDGET
    assert best_observed(found, LOOSE).drop(TASK) > DROP_BUDGET  # without it, a trial over it is the best
    unscored = [row(0, 0.1, "1:1", 0.3, 0.0)]  # a trial never scored cannot show it is within the budget
    assert best_observed(unscored, LOOSE, {TASK: DROP_BUDGET}) is None


SETTING = Setting(
    space=SPACE, forgetting_budget=LOOSE, pick=PickConfig(), config=ConfirmationConfig(seeds=2, candidates=1),
    first_seed=1, downstream_budget={TASK: DROP_BUDGET},
)  # fmt: skip


def confirmed_with(drops):
    """The searched rows and the first round's confirmation trials at the pick, within forgetting, with `drops`."""
    found = rows()
    first = confirmation_state(found, SETTING)
    point = first.pick.point
    return [*found, *(
        scored(100 + k, point.lr_fraction, point.mix, 0.2, 0.001, drop, seed=seed, confirms=0)
        for k, (seed, drop) in enumerate(zip(first.due.seeds, drops))
    )]  # fmt: skip


def test_a_confirmation_within_forgetting_but_over_the_drop_budget_does_not_confirm():
    setting = SETTING
    over = confirmation_state(confirmed_with([0.06, 0.08]), setting)
    assert over.confirmation.outcome is Outcome.NOT_FOUND
    assert f"{TASK} drop 0.0700" in over.confirmation.reason and "over its budget 0.05" in over.confirmation.reason
    held = confirmation_state(confirmed_with([0.01, 0.03]), setting)
    assert held.confirmation.outcome is Outcome.CONFIRMED
    assert held.confirmation.confirmed.drops[TASK].mean == pytest.approx(0.02)
    assert "within the budgets" in held.confirmation.reason


def test_the_headline_says_which_budget_bound_the_pick_and_each_figure_its_confirmation_measured():
    from sweep.choice.verdict import headline

    held = confirmation_state(confirmed_with([0.01, 0.03]), SETTING)
    sentence = headline(held.pick, held.confirmation, budget=LOOSE, max_lr=3e-3)
    assert f"bound by {budget_name(TASK)}" in sentence and held.pick.bound_by in sentence
    assert f"{TASK} drop 0.0200 ± 0.0141: within the forgetting budget 1 and the downstream budget(s)" in sentence
