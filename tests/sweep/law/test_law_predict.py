"""The prediction at a target: the pick's rule over the refits of every credible form (the highest lower-confidence
domain_gain with P(forgetting <= budget) >= min_probability) beside the mean-constrained point, bootstrap intervals
that hold the known law's values, and each refusal: an optimum beyond the searched lr_fraction or share is "extend
the space toward ..." with the law's own, unclipped point, refits scattering beyond the box refuse an answer whose
point lies inside, rows that cannot reach the target, a budget nothing meets, no refits and a form that misses its
rows by more than the replicates' noise are "no credible prediction" with the figures."""

from __future__ import annotations

import math

import pytest

from sweep.law.config import LawSettings
from sweep.law.optimum import SearchBox, at
from sweep.law.predict import predict
from sweep.law.select import fit_forms
from sweep.law.table import ObservationTable
from sweep.study.config import PickConfig
from tests.sweep.ladder.synthetic import RUNGS, TRUTH, draw
from tests.sweep.law.test_law_fit import BUDGET, scale

SETTINGS = LawSettings(starts=8, refits=10)
PICK = PickConfig()


@pytest.fixture(scope="module")
def table():
    return draw()


@pytest.fixture(scope="module")
def laws(table):
    return fit_forms(table, SETTINGS)


def test_the_answer_keeps_the_budget_with_the_picks_probability_and_the_mean_point_is_a_coin_flip(table, laws):
    """40 refits: the answer's P is the share of them that keep the budget there, at least the pick's 0.9; the
    mean-constrained point, where the mean law's forgetting equals the budget, keeps it in about half."""
    target = scale(7.4e6)
    settings = SETTINGS.model_copy(update={"refits": 40})
    prediction = predict(table, laws, target, SearchBox.covering(table), BUDGET, settings, PICK)
    assert prediction.credible and prediction.refits == 40
    point, mean = prediction.optimum, prediction.mean_optimum
    assert prediction.within_budget >= 0.9 and prediction.within_budget * 40 == round(prediction.within_budget * 40)
    assert mean.forgetting == pytest.approx(BUDGET, abs=2e-4) and 0.2 < prediction.mean_within_budget < 0.8
    assert point.forgetting < mean.forgetting and point.domain_gain < mean.domain_gain  # the price of certainty
    assert prediction.lower_gain < point.domain_gain
    intervals = prediction.intervals
    truth = at(TRUTH, target, point.lr_fraction, point.domain_share)
    assert intervals.lr_fraction.contains(0.1475) and intervals.domain_share.contains(0.461)  # TRUTH's optimum there
    assert intervals.domain_gain.contains(truth.domain_gain) and intervals.forgetting.contains(truth.forgetting)
    assert truth.forgetting <= BUDGET  # the truth keeps the budget where the answer is, as P says it should
    assert sum(form.refits for form in prediction.forms) == 40


def test_a_stricter_rule_moves_the_answer_further_from_the_budget(table, laws):
    settings = SETTINGS.model_copy(update={"refits": 40})
    box = SearchBox.covering(table)
    loose = predict(table, laws, scale(7.4e6), box, BUDGET, settings, PickConfig(min_probability=0.6))
    strict = predict(table, laws, scale(7.4e6), box, BUDGET, settings, PickConfig(min_probability=0.99))
    assert strict.within_budget >= 0.99 and loose.within_budget >= 0.6
    assert strict.optimum.forgetting < loose.optimum.forgetting


def test_no_refits_measure_no_probability_so_nothing_is_promoted(table, laws):
    prediction = predict(table, laws, scale(7.4e6), SearchBox.covering(table), BUDGET,
                         SETTINGS.model_copy(update={"refits": 0}), PICK)  # fmt: skip
    assert prediction.optimum is None and prediction.mean_optimum is not None
    assert prediction.refusal.kind == "no_credible_prediction"
    assert "P(forgetting <= budget) is measured by bootstrap refits, and none were made" in prediction.refusal.message


def test_an_optimum_above_the_searched_lr_is_extend_the_space_with_the_unclipped_point(table, laws):
    """At Llama 3.1 70B's N the known law wants lr_fraction 0.77, above a box ending at 0.4."""
    box = SearchBox(lr_fraction=(0.05, 0.4), domain_share=(1 / 9, 2 / 3))
    prediction = predict(table, laws, scale(6.845e10), box, BUDGET, SETTINGS, PICK)
    assert prediction.refusal.kind == "extend_space"
    assert "extend the space toward higher lr_fraction (above 0.4)" in prediction.refusal.message
    point = prediction.optimum or prediction.mean_optimum
    assert point.lr_fraction > 0.5  # where the law puts it, never the box's edge
    assert f"lr_fraction {point.lr_fraction:.3g}" in prediction.refusal.message


def test_an_optimum_beyond_the_searched_shares_names_that_side(table, laws):
    box = SearchBox(lr_fraction=(0.05, 0.8), domain_share=(1 / 9, 0.25))
    prediction = predict(table, laws, scale(7.4e6), box, BUDGET, SETTINGS, PICK)
    assert prediction.refusal.kind == "extend_space"
    assert "more domain data (domain share above 0.25, mix 3:1)" in prediction.refusal.message


def test_refits_scattering_beyond_the_box_refuse_an_answer_inside_it(table, laws):
    """The answer (0.141) lies inside a box ending at lr_fraction 0.1495, just above the known law's optimum
    (0.1475); more than a tenth of the refits put their optimum above it."""
    box = SearchBox(lr_fraction=(0.05, 0.1495), domain_share=(1 / 9, 2 / 3))
    prediction = predict(table, laws, scale(7.4e6), box, BUDGET, SETTINGS, PICK)
    assert not prediction.toward and prediction.optimum.lr_fraction < 0.1495
    assert prediction.refits_outside > 1
    assert prediction.refusal.kind == "extend_space"
    assert "higher lr_fraction (above 0.1495)" in prediction.refusal.message
    assert f"{prediction.refits_outside} of 10 bootstrap refits" in prediction.refusal.message


def test_one_model_size_gives_no_credible_prediction_at_another():
    table = draw(rungs={"m": RUNGS["m"]})
    laws = fit_forms(table, LawSettings(starts=4))
    prediction = predict(table, laws, scale(7.4e6), SearchBox.covering(table), BUDGET, SETTINGS, PICK)
    assert prediction.refusal.kind == "no_credible_prediction"
    assert "every row has N = 7.384e+05, so how the losses move with N is unknown" in prediction.refusal.message
    assert prediction.optimum is None and prediction.refits == 0


def test_a_budget_nothing_meets_is_no_credible_prediction():
    """Training on general data alone forgets too (P > 0), so no point keeps forgetting at 0."""
    general = TRUTH.general.model_copy(update={"values": TRUTH.general.values | {"offset": 0.003}})
    table = draw(TRUTH.model_copy(update={"general": general}))
    prediction = predict(table, fit_forms(table, SETTINGS), scale(7.4e6), SearchBox.covering(table), 0.0, SETTINGS,
                         PICK)  # fmt: skip
    assert prediction.refusal.kind == "no_credible_prediction"
    assert "keep forgetting within the budget 0; the least the law predicts is" in prediction.refusal.message
    least = float(prediction.refusal.message.rsplit(" ", 1)[1])
    assert least > 0 and math.isfinite(least)


def test_a_form_that_misses_its_rows_by_more_than_the_replicates_differ_is_refused():
    """The largest rung forgets three times what the others do at the same point: no form holds all four rungs,
    and the residual on that rung is many times the replicates' spread."""
    general = TRUTH.general.model_copy(update={"values": TRUTH.general.values | {"shift": 0.6}})
    broken = TRUTH.model_copy(update={"general": general})
    others = {name: RUNGS[name] for name in ("xs", "s", "m")}
    table = ObservationTable.of(draw(rungs=others).rows + draw(broken, rungs={"l": RUNGS["l"]}, seed=1).rows)
    laws = fit_forms(table, SETTINGS)
    prediction = predict(table, laws, scale(7.4e6), SearchBox.covering(table), BUDGET, SETTINGS, PICK)
    assert not laws.best.misfit.fits
    misfit = laws.best.misfit
    assert prediction.refusal.kind == "no_credible_prediction"
    assert prediction.refusal.message.startswith(
        f"the law does not fit these runs (residual {misfit.residual:.2g} against noise {misfit.noise:.2g} in "
    )
    assert misfit.noise == pytest.approx(
        laws.noise.forgetting if misfit.loss == "forgetting" else laws.noise.domain_gain
    )
    assert misfit.residual > 2 * misfit.noise


@pytest.mark.parametrize("rungs", [("xs", "s", "m"), ("s", "l")])
def test_intervals_widened_for_few_rungs_hold_only_values_a_plan_can_have(rungs):
    """Few rungs widen the refits' intervals (x2.2 at three, x5.4 at two): lr_fraction is widened by a factor and
    the share on the logit scale, so that neither end reaches 0 (or 1) and is cut there, an interval that would
    hold every LR down to none (two rungs at this noise: widened linearly, lr_fraction 0 to 0.49)."""
    table = draw(rungs={name: RUNGS[name] for name in rungs}, noise=2e-3, seed=1)
    settings = SETTINGS.model_copy(update={"refits": 20})
    prediction = predict(table, fit_forms(table, settings), scale(7.4e6), SearchBox.covering(table), BUDGET, settings,
                         PickConfig(min_probability=0.5))  # fmt: skip
    intervals = prediction.intervals
    assert intervals is not None
    assert 0.0 < intervals.lr_fraction.low < prediction.optimum.lr_fraction < intervals.lr_fraction.high
    assert 0.0 < intervals.domain_share.low < intervals.domain_share.high < 1.0
