"""A rung's study as rows of the law: every evaluation of every trial, a trial stopped early contributing its curve
up to where it stopped, a diverging trial's blown-up evaluations left out and its earlier ones kept, each row at the
trial's own point, seed and LR schedule so far, against the base's losses the trial stored."""

from __future__ import annotations

import pytest
from scripted import BASE, STEPS, scripted

from sweep.files.compat import TRIAL_BASE
from sweep.files.records import CorruptFile
from sweep.ladder.law_study import study_observations
from sweep.study.record import Attr
from sweep.study.trial import record_result, run_study_trial
from sweep.target.schedule import lr_mean
from train_entry.trial_config import BaseLosses

STUDY = "study 'test' in sqlite:///optuna.db"

GAINS = [0.1 + 0.02 * k for k in range(len(STEPS))]


def test_every_evaluation_of_every_trial_is_a_row(open_sweep):
    sweep = open_sweep(sampler="random", pruner={"type": "none"}, forgetting_guard=None)
    numbers = [sweep.ask().number for _ in range(3)]
    run_study_trial(sweep, numbers[0], scripted(GAINS, forgetting=0.004), base=BASE)
    run_study_trial(
        sweep, numbers[1], scripted(GAINS, diverge_after=100), base=BASE
    )  # stopped at its fourth evaluation
    blown = scripted(GAINS, forgetting=lambda step: 50.0 if step > 50 else 0.001, diverge_after=75)
    run_study_trial(
        sweep, numbers[2], blown, base=BASE
    )  # its general loss 153 nats at its last two: no observation of a law
    rows = study_observations(sweep, rung="m", parameters=738_432, pretrain_tokens=2.4e6, study=STUDY)
    by_trial = {number: [row for row in rows if row.trial == str(number)] for number in numbers}
    assert [len(by_trial[number]) for number in numbers] == [len(STEPS), 4, 2]
    first, proxy = by_trial[numbers[0]], sweep.plan.proxy
    point = sweep.plan.space.point(sweep.frozen(numbers[0]).params)
    assert {(row.rung, row.parameters, row.pretrain_tokens) for row in rows} == {("m", 738_432, 2.4e6)}
    assert [row.tokens for row in first] == [step * 1024 for step in STEPS]
    assert [row.lr_mean for row in first] == [lr_mean(proxy, steps=step, total_steps=proxy.steps) for step in STEPS]
    assert all(row.lr_fraction == point.lr_fraction and row.domain_share == point.mix.domain_share for row in first)
    assert {(row.base_general_loss, row.base_domain_loss) for row in rows} == {(BASE.general_loss, BASE.domain_loss)}
    assert [1 - row.domain_loss / row.base_domain_loss for row in first] == pytest.approx(GAINS)
    assert all(row.seed == proxy.seed for row in rows)


def test_the_rows_hold_the_base_losses_the_trial_stored_not_the_formulas_solved_back(open_sweep):
    """A trial's base on another validation draw (a confirmation trial's): its rows are against what it stored, bit
    for bit, where solving domain_gain and forgetting back gave the base its scripted metrics were computed from."""
    sweep = open_sweep(sampler="random", pruner={"type": "none"}, forgetting_guard=None)
    number = sweep.ask().number
    own = BaseLosses(domain_loss=3.1, general_loss=2.9)
    run_study_trial(sweep, number, scripted(GAINS, forgetting=0.004), base=own)
    rows = study_observations(sweep, rung="m", parameters=738_432, pretrain_tokens=2.4e6, study=STUDY)
    assert {(row.base_general_loss, row.base_domain_loss) for row in rows} == {(2.9, 3.1)}
    assert [row.domain_loss for row in rows] == [BASE.domain_loss * (1 - gain) for gain in GAINS]


@pytest.mark.parametrize(
    ("stored", "named"),
    [
        (None, "is missing: the trial was recorded by an earlier cpt-sweep"),
        ({"domain_loss": 3.0, "general_loss": 3.0}, "no format_version"),
        ("stamped", "domain_loss: Input should be greater than 0 (got -1.0)"),
        (
            {"format_version": 1, "domain_loss": "3.0", "general_loss": 3.0},
            "domain_loss: Input should be a valid number",
        ),
        ({"format_version": 1, "domain_loss": 3.0}, "general_loss: Field required"),
        (
            {"format_version": 1, "domain_loss": 3.0, "general_loss": 1e300},
            "general_loss: Input should be less than or",
        ),
        ([3.0, 3.0], "not an object of keys"),
    ],
)
def test_a_missing_or_corrupt_stored_base_loss_is_an_input_error_naming_the_study_trial_and_key(
    open_sweep, stored, named
):
    sweep = open_sweep(sampler="random", pruner={"type": "none"}, forgetting_guard=None)
    number = sweep.ask().number
    if stored is None:  # a trial recorded without its base: its outcome written, as an earlier cpt-sweep did
        record_result(sweep, number, scripted(GAINS)(lambda metrics: False), stop_reason=None)
    else:
        if stored == "stamped":
            stored = TRIAL_BASE.stamped({"domain_loss": -1.0, "general_loss": 3.0})

        def overwritten(report):  # the stored value replaced while the trial runs, as a hand or a bug could
            sweep.trial(number).set_user_attr(Attr.BASE_LOSSES.value, stored)
            return scripted(GAINS)(report)

        run_study_trial(sweep, number, overwritten, base=BASE)
    with pytest.raises(CorruptFile) as error:
        study_observations(sweep, rung="m", parameters=738_432, pretrain_tokens=2.4e6, study=STUDY)
    assert str(error.value).startswith(f"{STUDY}: trial {number}'s user attr 'base_losses'")
    assert named in str(error.value)
