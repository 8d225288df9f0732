"""The law fitted to evaluations drawn from a known law with noise (tests/sweep/ladder/synthetic.py): it
recovers the known law's constrained optimum beyond the largest rung, reports its fit per loss and per rung, is
not pulled by a few wild evaluations, and fixes what its rows cannot determine instead of inventing it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sweep.law.config import LawSettings
from sweep.law.fit import fit_law
from sweep.law.optimum import SearchBox, constrained_optimum
from sweep.law.table import ObservationTable
from sweep.target.scale import TargetScale
from sweep.target.schedule import lr_mean
from tests.sweep.ladder.synthetic import (
    PRETRAIN_TOKENS_PER_PARAMETER,
    RUNGS,
    SCHEDULE,
    STEPS,
    TOKENS_PER_PARAMETER,
    TRUTH,
    draw,
)

BUDGET = 0.01
SETTINGS = LawSettings()


def scale(parameters: float) -> TargetScale:
    """A target matched to the ladder: its tokens per parameter, pretraining tokens per parameter and schedule."""
    mean = lr_mean(SCHEDULE, steps=STEPS, total_steps=STEPS)
    tokens, pretrain_tokens = TOKENS_PER_PARAMETER * parameters, PRETRAIN_TOKENS_PER_PARAMETER * parameters
    return TargetScale(
        name=f"{parameters:.3g}", parameters=parameters, tokens=tokens, pretrain_tokens=pretrain_tokens, lr_mean=mean
    )


@pytest.fixture(scope="module")
def table() -> ObservationTable:
    return draw()


@pytest.fixture(scope="module")
def law(table):
    return fit_law(table, SETTINGS)


def test_the_fit_recovers_the_optimum_of_the_law_its_rows_were_drawn_from(table, law):
    """At 7.4 M parameters, 3x beyond the largest rung, the fitted law's optimum is the known law's: lr_fraction
    within x1.15, domain share within 0.02, gain within 0.001 (tolerances a few times the spread of refits)."""
    box = SearchBox.covering(table)
    truth = constrained_optimum(TRUTH, scale(7.4e6), box, BUDGET)
    fitted = constrained_optimum(law, scale(7.4e6), box, BUDGET)
    assert truth.inside and fitted.inside
    assert abs(math.log(fitted.point.lr_fraction / truth.point.lr_fraction)) < math.log(1.15)
    assert abs(fitted.point.domain_share - truth.point.domain_share) < 0.02
    assert abs(fitted.point.domain_gain - truth.point.domain_gain) < 0.001
    assert fitted.point.forgetting == pytest.approx(BUDGET, abs=1e-6)  # the budget binds, as in the truth
    assert float(TRUTH.forgetting(7.4e6, fitted.point.lr_fraction, scale(7.4e6).time, fitted.point.domain_share)) == (
        pytest.approx(BUDGET, abs=0.0015)
    )


def test_fit_quality_is_per_loss_and_per_rung(law):
    """R2 per loss, and each rung's residuals near the noise the rows were drawn with (sd 5e-4)."""
    for quality in (law.general_quality, law.domain_quality):
        assert quality.r2 > 0.99
        assert [r.rung for r in quality.rungs] == list(RUNGS)
        assert all(3e-4 < r.rms < 8e-4 and abs(r.mean) < 2e-4 for r in quality.rungs)
        assert quality.starts_agreeing >= 2
    assert (law.rows, law.trials, law.rungs) == (432, 108, list(RUNGS))  # 25 grid points and 2 replicates a rung


def test_a_few_wild_evaluations_do_not_pull_the_law(table, law):
    """Four trials' last evaluations 30 % over the base (a diverging run's): the Huber loss counts them linearly,
    and the optimum stays where the clean rows put it."""
    wild = [i for i, row in enumerate(table.rows) if row.rung == "l" and row.trial in ("3", "8", "13", "18")][-4:]
    rows = [
        row.model_copy(update={"general_loss": row.base_general_loss * 1.3}) if i in wild else row
        for i, row in enumerate(table.rows)
    ]
    box = SearchBox.covering(table)
    clean = constrained_optimum(law, scale(7.4e6), box, BUDGET).point
    robust = constrained_optimum(fit_law(ObservationTable.of(rows), SETTINGS), scale(7.4e6), box, BUDGET).point
    assert abs(math.log(robust.lr_fraction / clean.lr_fraction)) < math.log(1.1)
    assert abs(robust.domain_share - clean.domain_share) < 0.01


def test_what_the_rows_never_vary_is_fixed_not_fitted():
    """One rung: the size exponent is not determined, so it is fixed at 0 and the law says it spans one N."""
    law = fit_law(draw(rungs={"m": RUNGS["m"]}), LawSettings(starts=4))
    assert not law.general.spans.parameters and law.general.spans.lr_area and law.general.spans.domain_share
    assert law.general.values["size_exponent"] == 0.0 and law.domain.values["size_exponent"] == 0.0
    assert np.isfinite(law.forgetting(RUNGS["m"], 0.1, 1e4, 0.3))


def test_the_form_that_bends_finds_a_power_law_where_the_rows_follow_one(table):
    """The rows follow N^-0.2 in forgetting: size-curve's level at each size is that power (within 0.02 of
    -0.2 ln(N / N_xs)), its curve bends no further beyond them (sd under 0.1 two decades out), and its optimum at
    7.4 M parameters is the known law's, as dcpt-area's is."""
    law = fit_law(table, SETTINGS, form="size-curve")
    curve = law.general.curve
    assert curve.sizes == pytest.approx([math.log10(size) for size in RUNGS.values()])
    expected = [-0.2 * math.log(size / RUNGS["xs"]) for size in RUNGS.values()]
    assert curve.levels == pytest.approx(expected, abs=0.02)
    assert float(curve.posterior(np.array(math.log10(RUNGS["l"]) + 2.0))[1]) < 0.1
    box = SearchBox.covering(table)
    truth = constrained_optimum(TRUTH, scale(7.4e6), box, BUDGET).point
    fitted = constrained_optimum(law, scale(7.4e6), box, BUDGET).point
    assert abs(math.log(fitted.lr_fraction / truth.lr_fraction)) < math.log(1.15)
    assert abs(fitted.domain_share - truth.domain_share) < 0.02
    assert "exp(g(log N); g 0 at N 9.248e+04" in law.general.formula()


def test_the_form_that_bends_follows_levels_no_power_of_n_gives():
    """Forgetting at the largest rung about three times the power law's (its share term's B tripled): size-curve's
    level there takes it, more than ln 2 over the power law's step, where dcpt-area's one exponent misses that rung
    by many times the noise."""
    general = TRUTH.general.model_copy(update={"values": TRUTH.general.values | {"shift": 0.6}})
    broken = TRUTH.model_copy(update={"general": general})
    others = {name: RUNGS[name] for name in ("xs", "s", "m")}
    table = ObservationTable.of(draw(rungs=others).rows + draw(broken, rungs={"l": RUNGS["l"]}, seed=1).rows)
    bent = fit_law(table, SETTINGS, form="size-curve")
    power = fit_law(table, SETTINGS, form="dcpt-area")
    worst = {law.form: max(r.rms for r in law.general_quality.rungs) for law in (bent, power)}
    assert worst["size-curve"] < 1e-3 < 3 * 1e-3 < worst["dcpt-area"]
    step = bent.general.curve.levels[-1] - bent.general.curve.levels[-2]
    assert step - (-0.2 * math.log(RUNGS["l"] / RUNGS["m"])) > math.log(2.0)
