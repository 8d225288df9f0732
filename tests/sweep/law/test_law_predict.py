"""The prediction at a target: the pick's rule over the refits of every credible form, each with its draw of the
form's error (the highest lower-confidence domain_gain with P(forgetting <= budget) >= min_probability) beside the
mean-constrained point, bootstrap intervals that hold the known law's values with the shares of their variance
that noise, form spread and form error make, a misfit within the stated bound answered with the wider interval,
and each refusal: an optimum beyond the searched lr_fraction or share is "extend the space toward ..." with the
law's own, unclipped point; too few or too close rungs, and a form error that leaves no point in the box the
rule's P, name the rung that would help; a misfit beyond the bound, rows that cannot reach the target, a budget
nothing meets and no refits say why, with the figures."""

from __future__ import annotations

import functools
import math
import re

import pytest

from sweep.law.bootstrap import bootstrap_refits
from sweep.law.chance import probability_at
from sweep.law.config import LawSettings
from sweep.law.discrepancy import MIN_SPAN, STEP
from sweep.law.lines import prediction_lines
from sweep.law.noise import MISFIT
from sweep.law.optimum import SearchBox, at, constrained_optimum
from sweep.law.predict import discrepancy_at, predict, with_discrepancy
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


@pytest.fixture(scope="module")
def refits(table, laws):
    """refits(count): the bootstrap refits of `table`'s laws at SETTINGS with `count` refits, made once. They depend on
    the table, the laws and the settings alone, so predictions at other targets, boxes and rules share them (predict's
    `refits`); test_each_intervals_sources_are_shares_of_its_variance holds them equal to predict's own."""
    return functools.cache(lambda count: bootstrap_refits(table, laws, SETTINGS.model_copy(update={"refits": count})))


def test_the_answer_keeps_the_budget_with_the_picks_probability_and_the_mean_point_is_a_coin_flip(table, laws, refits):
    """40 refits: the answer's P is the share of them that keep the budget there, at least the pick's 0.9; the
    mean-constrained point, where the mean law's forgetting equals the budget, keeps it in about half."""
    target = scale(7.4e6)
    settings = SETTINGS.model_copy(update={"refits": 40})
    prediction = predict(table, laws, target, SearchBox.covering(table), BUDGET, settings, PICK, refits=refits(40))
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


def test_a_stricter_rule_moves_the_answer_further_from_the_budget(table, laws, refits):
    settings = SETTINGS.model_copy(update={"refits": 40})
    box = SearchBox.covering(table)
    loose, strict = (
        predict(table, laws, scale(7.4e6), box, BUDGET, settings, PickConfig(min_probability=rule), refits=refits(40))
        for rule in (0.6, 0.99)
    )
    assert strict.within_budget >= 0.99 and loose.within_budget >= 0.6
    assert strict.optimum.forgetting < loose.optimum.forgetting


def test_no_refits_measure_no_probability_so_nothing_is_promoted(table, laws):
    prediction = predict(table, laws, scale(7.4e6), SearchBox.covering(table), BUDGET,
                         SETTINGS.model_copy(update={"refits": 0}), PICK)  # fmt: skip
    assert prediction.optimum is None and prediction.mean_optimum is not None
    assert prediction.refusal.kind == "no_credible_prediction"
    assert "P(forgetting <= budget) is measured by bootstrap refits, and none were made" in prediction.refusal.message


def test_an_optimum_above_the_searched_lr_is_extend_the_space_with_the_unclipped_point(table, laws, refits):
    """At Llama 3.1 70B's N the known law wants lr_fraction 0.77, above a box ending at 0.4."""
    box = SearchBox(lr_fraction=(0.05, 0.4), domain_share=(1 / 9, 2 / 3))
    prediction = predict(table, laws, scale(6.845e10), box, BUDGET, SETTINGS, PICK, refits=refits(SETTINGS.refits))
    assert prediction.refusal.kind == "extend_space"
    assert "extend the space toward higher lr_fraction (above 0.4)" in prediction.refusal.message
    point = prediction.optimum or prediction.mean_optimum
    assert point.lr_fraction > 0.5  # where the law puts it, never the box's edge
    assert f"lr_fraction {point.lr_fraction:.3g}" in prediction.refusal.message


def test_an_optimum_beyond_the_searched_shares_names_that_side(table, laws, refits):
    box = SearchBox(lr_fraction=(0.05, 0.8), domain_share=(1 / 9, 0.25))
    prediction = predict(table, laws, scale(7.4e6), box, BUDGET, SETTINGS, PICK, refits=refits(SETTINGS.refits))
    assert prediction.refusal.kind == "extend_space"
    assert "more domain data (domain share above 0.25, mix 3:1)" in prediction.refusal.message


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
    found = re.search(
        r"keep forgetting within the budget 0; the least the law predicts is (\S+), and (\S+) at the rungs' nearest "
        r"size \(N = 2\.37e\+06\) with 7\.4e\+06's tokens: no rung would help, only a budget above that",
        prediction.refusal.message,
    )
    assert found, prediction.refusal.message
    least, at_rungs = float(found[1]), float(found[2])
    assert least > 0 and math.isfinite(least) and at_rungs > 0
    assert prediction.refusal.add_rung_at is None


def test_forgetting_that_grows_with_n_past_the_budget_names_the_rung_that_would_say_whether_it_does():
    """A law whose forgetting grows with N (size exponent -0.3, against the published trend): a budget its least
    forgetting keeps at the largest rung's size but not at the target's is refused for the N-dependence, with the
    rung half a decade toward the target."""
    growing = {"size_exponent": -0.3, "offset": 0.003}
    general = TRUTH.general.model_copy(update={"values": TRUTH.general.values | growing})
    table = draw(TRUTH.model_copy(update={"general": general}))
    laws = fit_forms(table, SETTINGS)
    box, target = SearchBox.covering(table), scale(7.4e7)
    mean = laws.stacked()
    at_rung = constrained_optimum(mean, target.model_copy(update={"parameters": RUNGS["l"]}), box, 1.0)
    at_target = constrained_optimum(mean, target, box, 1.0)
    assert at_target.least_forgetting > 1.5 * at_rung.least_forgetting
    budget = math.sqrt(at_rung.least_forgetting * at_target.least_forgetting)
    prediction = predict(table, laws, target, box, budget, SETTINGS, PICK)
    assert prediction.refusal.kind == "no_credible_prediction"
    message = prediction.refusal.message
    least = at_target.least_forgetting
    assert f"the least the law predicts is {least:.4g}, where at the rungs' nearest size" in message
    assert f"it is {at_rung.least_forgetting:.4g}, within it: the law's forgetting grows with N" in message
    assert prediction.refusal.add_rung_at == pytest.approx(RUNGS["l"] * 10**STEP)
    assert f"a rung at N = {RUNGS['l'] * 10**STEP:.3g}" in message


def _broken(share_exponent: float, offset: float = TRUTH.general.values["offset"]) -> ObservationTable:
    """The known law at three rungs, and a largest rung whose forgetting rises with the share as another exponent
    would make it: no form holds it and the others to their noise, by a margin growing with the exponent."""
    general = TRUTH.general.model_copy(update={"values": TRUTH.general.values | {"offset": offset}})
    broken = general.model_copy(update={"values": general.values | {"share_exponent": share_exponent}})
    base, bent = (TRUTH.model_copy(update={"general": law}) for law in (general, broken))
    others = {name: RUNGS[name] for name in ("xs", "s", "m")}
    return ObservationTable.of(draw(base, rungs=others).rows + draw(bent, rungs={"l": RUNGS["l"]}, seed=1).rows)


@pytest.fixture(scope="module")
def misfit_table():
    return _broken(2.0, offset=0.004)


@pytest.fixture(scope="module")
def misfit_laws(misfit_table):
    return fit_forms(misfit_table, SETTINGS)


def test_a_misfit_within_the_bound_is_answered_with_the_wider_interval_and_the_rules_p(
    misfit_table, misfit_laws, laws, table, refits
):
    """The best form misses the broken rung by 2 to 5 times the noise: the law answers, carrying that error (its sd
    at the target is the discrepancy's there, a fifth of forgetting or more where the clean ladder's is under 5 %,
    and most of the forgetting interval's variance), its interval wider than the clean ladder's, and P >= 0.9
    counted over the refits with their draws of the error."""
    assert 2.0 < misfit_laws.best.misfit.ratio <= MISFIT
    settings = SETTINGS.model_copy(update={"refits": 40})
    target = scale(7.4e6)
    box = SearchBox.covering(misfit_table)
    misfit_refits = bootstrap_refits(misfit_table, misfit_laws, settings)
    prediction = predict(misfit_table, misfit_laws, target, box, BUDGET, settings, PICK, refits=misfit_refits)
    clean = predict(table, laws, target, SearchBox.covering(table), BUDGET, settings, PICK, refits=refits(40))
    assert prediction.credible and prediction.within_budget >= 0.9
    carried = prediction.discrepancy
    distance = misfit_laws.discrepancy.distance(target.parameters)
    assert carried.distance == pytest.approx(distance)
    assert carried.forgetting == pytest.approx(misfit_laws.discrepancy.forgetting.sd(distance, target.parameters))
    assert carried.forgetting > 0.2 and clean.discrepancy.forgetting < 0.05
    assert prediction.intervals.forgetting.sources.discrepancy > 0.5
    width = {
        name: p.intervals.forgetting.high - p.intervals.forgetting.low
        for name, p in (("misfit", prediction), ("clean", clean))
    }
    assert width["misfit"] > 2 * width["clean"]
    ensemble = with_discrepancy(
        [law for _, law in misfit_refits[0]], discrepancy_at(misfit_laws.discrepancy, target), box, settings
    )
    assert probability_at(ensemble, target, prediction.optimum, BUDGET) == prediction.within_budget


def test_a_form_error_that_leaves_no_point_the_rules_p_names_the_rung_that_would_help(misfit_table, misfit_laws):
    """Two decades and a half beyond the rungs the same misfit, grown, leaves no point in the box P >= 0.9 (the
    refits alone reach it): form_error, with the rung toward the target whose smaller error would let one reach it.
    The scenario lies where it must, at the rule's threshold: across refit seeds 0-4 the largest P inside the box is
    0.75-0.95 with the error and 0.9-1.0 without, so one seed that gives the refusal is pinned (the others answer or
    find refits beyond the box, each its own test's)."""
    target = scale(7.4e8)
    settings = SETTINGS.model_copy(update={"refits": 20, "seed": 1})
    prediction = predict(misfit_table, misfit_laws, target, SearchBox.covering(misfit_table), BUDGET, settings, PICK)
    refusal = prediction.refusal
    assert refusal.kind == "form_error"
    assert prediction.inside_probability < 0.9 <= prediction.plain_inside_probability
    assert RUNGS["l"] < refusal.add_rung_at < target.parameters
    carried = prediction.discrepancy
    assert (
        f"{carried.forgetting:.2g} in all there, {carried.distance:.1f} decades beyond the nearest rung; the most any "
        f"point in the box reaches is {prediction.inside_probability:.2f} (the refits alone: "
        f"{prediction.plain_inside_probability:.2f}); a rung at N = {refusal.add_rung_at:.3g}" in refusal.message
    )
    nearer = carried.distance - math.log10(refusal.add_rung_at / RUNGS["l"])
    sd = misfit_laws.discrepancy.forgetting.sd(nearer, target.parameters, bend_scale=nearer / carried.distance)
    assert f"bring that error to {sd:.2g} and let a point in the box reach P" in refusal.message


def test_a_misfit_beyond_the_bound_is_refused_as_the_forms_error():
    """The broken rung's share exponent further off: the best form misses it by more than MISFIT times the noise,
    more than a discrepancy term is meant to carry."""
    table = _broken(2.5)
    laws = fit_forms(table, SETTINGS)
    prediction = predict(table, laws, scale(7.4e6), SearchBox.covering(table), BUDGET, SETTINGS, PICK)
    misfit = laws.best.misfit
    assert misfit.ratio > MISFIT and prediction.refusal.kind == "form_error"
    assert prediction.refusal.message.startswith(
        f"the law does not fit these runs (residual {misfit.residual:.2g} against noise {misfit.noise:.2g} in "
    )
    assert misfit.noise == pytest.approx(
        laws.noise.forgetting if misfit.loss == "forgetting" else laws.noise.domain_gain
    )


@pytest.mark.parametrize(("rungs", "refused"), [(("xs", "s", "m"), None), (("s", "l"), "add_rung")])
def test_intervals_widened_for_few_rungs_hold_only_values_a_plan_can_have(rungs, refused):
    """Few rungs widen the refits' intervals (x2.2 at three, x5.4 at two): lr_fraction is widened by a factor and
    the share on the logit scale, so that neither end reaches 0 (or 1) and is cut there, an interval that would
    hold every LR down to none (two rungs at this noise: widened linearly, lr_fraction 0 to 0.49). Two sizes are
    too few to say how the form's error grows beyond them: shown, and refused naming the rung that would help."""
    table = draw(rungs={name: RUNGS[name] for name in rungs}, noise=2e-3, seed=1)
    settings = SETTINGS.model_copy(update={"refits": 20})
    prediction = predict(table, fit_forms(table, settings), scale(7.4e6), SearchBox.covering(table), BUDGET, settings,
                         PickConfig(min_probability=0.5))  # fmt: skip
    intervals = prediction.intervals
    assert intervals is not None
    assert 0.0 < intervals.lr_fraction.low < prediction.optimum.lr_fraction < intervals.lr_fraction.high
    assert 0.0 < intervals.domain_share.low < intervals.domain_share.high < 1.0
    assert (prediction.refusal.kind if prediction.refusal else None) == refused
    if refused:
        toward = min(7400000.0, RUNGS["l"] * 10**STEP)
        assert prediction.refusal.add_rung_at == pytest.approx(toward)
        assert "too few to say how the form's error grows beyond them: 2 model size(s)" in prediction.refusal.message


def test_rungs_too_close_in_n_are_refused_naming_a_rung_that_would_spread_them():
    sizes = {"a": 1_000_000, "b": 1_400_000, "c": 2_000_000}
    table = draw(rungs=sizes)
    prediction = predict(table, fit_forms(table, SETTINGS), scale(7.4e7), SearchBox.covering(table), BUDGET, SETTINGS,
                         PICK)  # fmt: skip
    assert prediction.refusal.kind == "add_rung"
    assert f"they span 0.30 decades (less than {MIN_SPAN:g})" in prediction.refusal.message
    assert prediction.refusal.add_rung_at == pytest.approx(2_000_000 * 10**STEP)


def test_each_intervals_sources_are_shares_of_its_variance(table, laws, refits):
    """On rows drawn from one of the forms the form's error is all but none: noise and form spread make nearly all
    of every interval. predict's own refits are the ones the module's tests share (the `refits` fixture)."""
    prediction = predict(table, laws, scale(7.4e6), SearchBox.covering(table), BUDGET, SETTINGS, PICK)
    assert predict(
        table, laws, scale(7.4e6), SearchBox.covering(table), BUDGET, SETTINGS, PICK, refits=refits(SETTINGS.refits)
    ) == prediction
    for name in ("lr_fraction", "domain_share", "domain_gain", "forgetting"):
        sources = getattr(prediction.intervals, name).sources
        assert sources.noise + sources.forms + sources.discrepancy == pytest.approx(1.0)
        assert sources.discrepancy < 0.3


@pytest.mark.parametrize(("high", "refused"), [(0.13, None), (0.1, "extend_space")])
def test_a_rule_point_a_hair_beyond_the_box_gives_the_best_inside_and_one_well_beyond_is_refused(
    table, laws, refits, high, refused
):
    """The known law's optimum at 7.4e6 lies at lr_fraction 0.1475: a box searched up to 0.13 ends where the gain along
    the budget's contour is flat, and the rule's own point beyond it gains less than the noise could tell (answered
    inside, saying so with the record's figures); one searched up to 0.1 leaves the optimum materially beyond."""
    box = SearchBox.covering(table).model_copy(update={"lr_fraction": (0.05, high)})
    settings = SETTINGS.model_copy(update={"refits": 20})
    prediction = predict(table, laws, scale(7.4e6), box, BUDGET, settings, PICK, refits=refits(20))
    if refused:
        assert prediction.refusal.kind == refused and prediction.at_edge is None
        assert "extend the space toward higher lr_fraction (above 0.1)" in prediction.refusal.message
        return
    edge, point = prediction.at_edge, prediction.optimum
    assert prediction.credible and not box.outside(point.lr_fraction, point.domain_share)
    assert box.outside(edge.beyond.lr_fraction, edge.beyond.domain_share) == ["higher lr_fraction (above 0.13)"]
    assert 0.0 <= edge.gains_more <= edge.material and edge.material >= laws.noise.domain_gain
    assert (
        f"  the best point inside the searched box: the rule's own point lies beyond it (lr_fraction "
        f"{edge.beyond.lr_fraction:.4g}, mix {edge.beyond.mix}) and gains {edge.gains_more:.2g} more lower-confidence "
        f"domain_gain, within the {edge.material:.2g} the noise and the form's error account for"
    ) in prediction_lines(prediction)
