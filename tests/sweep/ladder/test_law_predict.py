"""The prediction at a target: bootstrap intervals that hold the known law's values, P(forgetting within budget)
as a share of refits, and each refusal: an optimum beyond the searched lr_fraction or share is "extend the space
toward ..." with the law's own, unclipped point, refits scattering beyond the box refuse a prediction whose full
fit lies inside, and rows that cannot reach the target or a budget nothing meets are "no credible prediction"."""

from __future__ import annotations

import math

import pytest

from sweep.ladder.config import LawSettings
from sweep.ladder.law_fit import fit_law
from sweep.ladder.law_optimum import SearchBox, at
from sweep.ladder.law_predict import predict
from tests.sweep.ladder.synthetic import RUNGS, TRUTH, draw
from tests.sweep.ladder.test_law_fit import BUDGET, scale

SETTINGS = LawSettings(starts=8, refits=10)


@pytest.fixture(scope="module")
def table():
    return draw()


@pytest.fixture(scope="module")
def law(table):
    return fit_law(table, SETTINGS)


def test_intervals_hold_the_known_laws_values_and_p_is_a_share_of_refits(table, law):
    """20 refits: a 90 % interval's ends then rest on the two most extreme refits on each side."""
    target = scale(7.4e6)
    prediction = predict(
        table, law, target, SearchBox.covering(table), BUDGET, SETTINGS.model_copy(update={"refits": 20})
    )
    assert prediction.credible and prediction.refits == 20
    point, intervals = prediction.optimum, prediction.intervals
    truth = at(TRUTH, target, point.lr_fraction, point.domain_share)
    assert intervals.lr_fraction.contains(0.1475) and intervals.domain_share.contains(0.461)  # TRUTH's optimum there
    assert intervals.domain_gain.contains(truth.domain_gain) and intervals.forgetting.contains(truth.forgetting)
    assert intervals.lr_fraction.low < point.lr_fraction < intervals.lr_fraction.high
    assert prediction.within_budget * 20 == round(prediction.within_budget * 20)
    assert 0.0 < prediction.within_budget < 1.0  # the budget binds at the optimum: some refits keep it, some not


def test_an_optimum_above_the_searched_lr_is_extend_the_space_with_the_unclipped_point(table, law):
    """At Llama 3.1 70B's N the known law wants lr_fraction 0.77, above a box ending at 0.4."""
    box = SearchBox(lr_fraction=(0.05, 0.4), domain_share=(1 / 9, 2 / 3))
    prediction = predict(table, law, scale(6.845e10), box, BUDGET, SETTINGS.model_copy(update={"refits": 0}))
    assert prediction.refusal.kind == "extend_space"
    assert "extend the space toward higher lr_fraction (above 0.4)" in prediction.refusal.message
    assert prediction.optimum.lr_fraction > 0.6  # where the law puts it, never the box's edge
    assert f"lr_fraction {prediction.optimum.lr_fraction:.3g}" in prediction.refusal.message


def test_an_optimum_beyond_the_searched_shares_names_that_side(table, law):
    box = SearchBox(lr_fraction=(0.05, 0.8), domain_share=(1 / 9, 0.25))
    prediction = predict(table, law, scale(7.4e6), box, BUDGET, SETTINGS.model_copy(update={"refits": 0}))
    assert prediction.refusal.kind == "extend_space"
    assert "more domain data (domain share above 0.25, mix 3:1)" in prediction.refusal.message


def test_refits_scattering_beyond_the_box_refuse_an_optimum_inside_it(table, law):
    """The full fit's optimum (0.147) lies just inside a box ending at lr_fraction 0.148; more than a tenth of the
    refits put theirs above it."""
    box = SearchBox(lr_fraction=(0.05, 0.148), domain_share=(1 / 9, 2 / 3))
    prediction = predict(table, law, scale(7.4e6), box, BUDGET, SETTINGS)
    assert not prediction.toward  # the full fit alone would be promoted
    assert prediction.refits_outside > 1
    assert prediction.refusal.kind == "extend_space"
    assert "higher lr_fraction (above 0.148)" in prediction.refusal.message
    assert f"{prediction.refits_outside} of 10 bootstrap refits" in prediction.refusal.message


def test_one_model_size_gives_no_credible_prediction_at_another():
    table = draw(rungs={"m": RUNGS["m"]})
    law = fit_law(table, LawSettings(starts=4))
    prediction = predict(table, law, scale(7.4e6), SearchBox.covering(table), BUDGET, SETTINGS)
    assert prediction.refusal.kind == "no_credible_prediction"
    assert "every row has N = 7.384e+05, so how the losses move with N is unknown" in prediction.refusal.message
    assert prediction.optimum is None and prediction.refits == 0


def test_a_budget_nothing_meets_is_no_credible_prediction():
    """Training on general data alone forgets too (P > 0), so no point keeps forgetting at 0."""
    forgets = TRUTH.model_copy(update={"general": TRUTH.general.model_copy(update={"offset": 0.003})})
    table = draw(forgets)
    prediction = predict(table, fit_law(table, SETTINGS), scale(7.4e6), SearchBox.covering(table), 0.0, SETTINGS)
    assert prediction.refusal.kind == "no_credible_prediction"
    assert "keep forgetting within the budget 0; the least the law predicts is" in prediction.refusal.message
    least = float(prediction.refusal.message.rsplit(" ", 1)[1])
    assert least > 0 and math.isfinite(least)
