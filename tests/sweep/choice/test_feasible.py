import itertools
import math

import pytest

from sweep.choice.feasible import Score, is_feasible, ranked_feasible, ranked_infeasible

BUDGET = 0.02


def same(score: Score) -> Score:
    return score


def test_feasible_means_forgetting_at_most_the_budget_and_never_a_missing_or_non_finite_one():
    assert is_feasible(0.02, BUDGET) and is_feasible(-0.01, BUDGET)
    assert not any(is_feasible(value, BUDGET) for value in (0.0200001, None, math.nan, math.inf))


def test_ties_go_one_way_gain_then_less_forgetting_then_the_earlier_trial_whatever_the_input_order():
    scores = [Score(0.2, 0.015, 3), Score(0.2, 0.01, 2), Score(0.2, 0.01, 1), Score(0.3, 0.02, 4), Score(0.9, 0.05, 0)]
    expected = [Score(0.3, 0.02, 4), Score(0.2, 0.01, 1), Score(0.2, 0.01, 2), Score(0.2, 0.015, 3)]
    for order in itertools.permutations(scores):
        assert ranked_feasible(order, BUDGET, same) == expected


def test_outside_the_budget_the_least_forgetting_comes_first_a_tie_to_the_higher_gain_then_the_earlier():
    scores = [Score(0.1, 0.05, 0), Score(0.3, 0.05, 2), Score(0.3, 0.05, 1), Score(0.9, 0.03, 3), Score(0.9, 0.0, 4)]
    ranked = ranked_infeasible(scores, BUDGET, same)
    assert [score.number for score in ranked] == [3, 1, 2, 0]


@pytest.mark.parametrize("budget", [0.0, 0.02, 1.0])
def test_every_item_is_feasible_or_not_exactly_once(budget):
    scores = [Score(0.1 * k, 0.01 * k, k) for k in range(6)]
    both = ranked_feasible(scores, budget, same) + ranked_infeasible(scores, budget, same)
    assert sorted(both) == sorted(scores)
