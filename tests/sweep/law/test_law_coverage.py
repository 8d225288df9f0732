"""The law's answer judged against known laws it was and was not written for (tests/sweep/law/law_truths.py):
the 90 % intervals hold the truth's optimum two decades beyond the largest rung, the promoted point keeps the
truth's forgetting within the budget, and a truth outside the searched box is refused. One draw of each truth in the
default suite; 30 of each behind `slow`, with the thresholds of issue 39 (figures in BENCHMARKS.md)."""

from __future__ import annotations

import pytest
from tests.sweep.law.law_truths import OUTSIDE, TRUTHS, judge

from sweep.law.config import LawSettings

QUICK = LawSettings(refits=40)
DRAWS = 30


@pytest.mark.parametrize("name", ["dcpt-area", "sum (no fitted form)"])
def test_one_draw_of_a_truth_is_answered_within_its_intervals_and_budget(name):
    judged = judge(name, TRUTHS[name], 0, QUICK)
    assert judged.refused is None and judged.covered and judged.within_budget


def test_a_truth_outside_the_box_is_refused():
    assert judge("outside", OUTSIDE, 0, QUICK).refused == "extend_space"


@pytest.mark.slow
@pytest.mark.law_coverage
@pytest.mark.parametrize("name", list(TRUTHS))
def test_thirty_draws_of_each_truth_are_covered_and_within_budget(name):
    judged = [judge(name, TRUTHS[name], seed, LawSettings(refits=100)) for seed in range(DRAWS)]
    answered = [j for j in judged if j.refused is None]
    assert answered, f"every draw of {name} was refused"
    assert sum(j.covered for j in answered) >= 0.85 * len(answered)
    assert sum(j.within_budget for j in answered) >= 0.90 * len(answered)


@pytest.mark.slow
@pytest.mark.law_coverage
def test_every_draw_of_a_truth_outside_the_box_is_refused():
    assert all(judge("outside", OUTSIDE, seed, LawSettings(refits=100)).refused for seed in range(10))
