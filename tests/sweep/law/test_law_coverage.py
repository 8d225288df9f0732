"""The law's answer judged against known laws it was and was not written for (tests/sweep/law/law_truths.py):
answered where the truth's optimum lies inside the box, its 90 % intervals holding the truth's optimum two decades
beyond the largest rung, its promoted point keeping the truth's forgetting within the budget, and a truth outside
the searched box refused. One draw of each truth in the default suite; 30 of each behind `--law-coverage`, with the
thresholds of issues 39 and 50 (figures in BENCHMARKS.md)."""

from __future__ import annotations

import pytest

from sweep.law.config import LawSettings
from tests.sweep.law.law_truths import OUTSIDE, TRUTHS, judge

QUICK = LawSettings(starts=8, refits=40)
DRAWS = 30
ANSWERED = 0.80
COVERED = 0.85
WITHIN = 0.90


@pytest.mark.parametrize("name", list(TRUTHS))
def test_one_draw_of_a_truth_is_answered_within_its_intervals_and_budget(name):
    judged = judge(name, TRUTHS[name], 0, QUICK)
    assert judged.inside
    assert judged.refused is None, judged.message
    assert judged.covered and judged.within_budget, judged.message


def test_a_truth_outside_the_box_is_refused():
    assert judge("outside", OUTSIDE, 0, QUICK).refused == "extend_space"


@pytest.mark.slow
@pytest.mark.law_coverage
@pytest.mark.parametrize("name", list(TRUTHS))
def test_thirty_draws_of_each_truth_are_answered_covered_and_within_budget(name):
    judged = [judge(name, TRUTHS[name], seed, LawSettings(refits=100)) for seed in range(DRAWS)]
    answered = [j for j in judged if j.refused is None]
    inside = [j for j in judged if j.inside]
    assert len([j for j in inside if j.refused is None]) >= ANSWERED * len(inside)
    assert sum(j.covered for j in answered) >= COVERED * len(answered)
    assert sum(j.within_budget for j in answered) >= WITHIN * len(answered)


@pytest.mark.slow
@pytest.mark.law_coverage
def test_every_draw_of_a_truth_outside_the_box_is_refused():
    assert all(judge("outside", OUTSIDE, seed, LawSettings(refits=100)).refused for seed in range(10))
