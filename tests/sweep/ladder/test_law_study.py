"""A rung's study as rows of the law: every evaluation of every trial, a trial stopped early contributing its curve
up to where it stopped, a diverging trial's blown-up evaluations left out and its earlier ones kept, each row at the
trial's own point, seed and LR schedule so far."""

from __future__ import annotations

import pytest
from scripted import STEPS, scripted

from sweep.ladder.law_study import study_observations
from sweep.law.table import lr_mean
from sweep.study.trial import run_study_trial

GAINS = [0.1 + 0.02 * k for k in range(len(STEPS))]


def test_every_evaluation_of_every_trial_is_a_row(open_sweep):
    sweep = open_sweep(sampler="random", pruner={"type": "none"}, forgetting_guard=None)
    numbers = [sweep.ask().number for _ in range(3)]
    run_study_trial(sweep, numbers[0], scripted(GAINS, forgetting=0.004))
    run_study_trial(sweep, numbers[1], scripted(GAINS, diverge_after=100))  # stopped at its fourth evaluation
    blown = scripted(GAINS, forgetting=lambda step: 50.0 if step > 50 else 0.001, diverge_after=75)
    run_study_trial(sweep, numbers[2], blown)  # its general loss 153 nats at its last two: no observation of a law
    rows = study_observations(sweep, rung="m", parameters=738_432, pretrain_tokens=2.4e6)
    by_trial = {number: [row for row in rows if row.trial == str(number)] for number in numbers}
    assert [len(by_trial[number]) for number in numbers] == [len(STEPS), 4, 2]
    first, proxy = by_trial[numbers[0]], sweep.plan.proxy
    point = sweep.plan.space.point(sweep.frozen(numbers[0]).params)
    assert {(row.rung, row.parameters, row.pretrain_tokens) for row in rows} == {("m", 738_432, 2.4e6)}
    assert [row.tokens for row in first] == [step * 1024 for step in STEPS]
    assert [row.lr_mean for row in first] == [lr_mean(proxy, steps=step, total_steps=proxy.steps) for step in STEPS]
    assert all(row.lr_fraction == point.lr_fraction and row.domain_share == point.mix.domain_share for row in first)
    assert [row.base_general_loss for row in first] == pytest.approx([3.0] * len(STEPS))
    assert [1 - row.domain_loss / row.base_domain_loss for row in first] == pytest.approx(GAINS)
    assert all(row.seed == proxy.seed for row in rows)
