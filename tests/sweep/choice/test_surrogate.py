"""Stopped trials in the surrogate, on scripted rows: a corner the sweep stopped for high forgetting must not come
out as feasible, as it did when the surrogate was fitted to the survivors alone."""

from __future__ import annotations

import numpy as np
from scripted import trial_row as row

from sweep.choice.observed import best_observed
from sweep.choice.pick import make_pick
from sweep.choice.surrogate import fit_surrogate, stopped
from sweep.space import SearchSpace
from sweep.study.config import PickConfig
from sweep.study.record import Status
from train_entry.mix import MixRatio

MIXES = ["4:1", "2:1", "1:1", "1:2", "1:4"]
SPACE = SearchSpace.model_validate({"lr_fraction": {"low": 0.05, "high": 0.2, "log": True}, "mix": MIXES})
BUDGET = 0.02
LRS = [float(lr) for lr in np.geomspace(0.05, 0.2, 6)]
CORNER = [(lr, mix) for lr in LRS[3:] for mix in MIXES[2:]]
"""High LR and little replay: where forgetting runs away, and where the guard stopped every trial."""


def corner_rows() -> list:
    """Survivors forget little everywhere they ran; every trial in the corner was stopped at step 100, its
    forgetting forecast to end at 0.06, three times the budget."""
    rng = np.random.default_rng(0)
    rows = []
    for lr in LRS:
        for mix in MIXES:
            gain = 0.1 + 0.05 * np.log(lr / 0.05) + 0.1 * MixRatio.parse(mix).domain_share + rng.normal(0, 0.001)
            if (lr, mix) in CORNER:
                rows.append(row(len(rows), lr, mix, gain - 0.03, 0.07, status=Status.PRUNED, forecast_forgetting=0.06))
            else:
                rows.append(row(len(rows), lr, mix, gain, 0.005 + rng.normal(0, 0.0005)))
    return rows


def within_budget_in_corner(rows) -> np.ndarray:
    surrogate = fit_surrogate(rows, SPACE)
    shares = [MixRatio.parse(mix).domain_share for _, mix in CORNER]
    _, forgetting = surrogate.predict([lr for lr, _ in CORNER], shares)
    return forgetting.probability_at_most(BUDGET)


def test_a_corner_stopped_for_high_forgetting_is_not_called_feasible():
    rows = corner_rows()
    survivors = [r for r in rows if r.status is Status.COMPLETED]
    # The survivors-only fit (the old surrogate) calls most of the corner feasible: nothing it saw forgot much.
    assert (within_budget_in_corner(survivors) >= 0.9).sum() >= len(CORNER) // 2
    # With the stopped trials as censored observations, no point of the corner is.
    assert within_budget_in_corner(rows).max() < 0.1
    pick = make_pick(rows, space=SPACE, budget=BUDGET, config=PickConfig(), observed=best_observed(rows, BUDGET))
    assert (pick.point.lr_fraction, pick.point.mix) not in CORNER
    assert pick.forgetting.mean <= BUDGET
    assert pick.fit.stopped == len(CORNER)


def test_a_censored_value_is_imputed_at_or_above_its_bound():
    """The bound is a floor: the fitted surface at a stopped trial is not below what the trial was forecast to end at,
    less the measurement noise."""
    rows = corner_rows()
    surrogate = fit_surrogate(rows, SPACE)
    shares = [MixRatio.parse(mix).domain_share for _, mix in CORNER]
    _, forgetting = surrogate.predict([lr for lr, _ in CORNER], shares)
    assert (forgetting.mean >= 0.06 - 2 * forgetting.remeasured_sd()).all()


def test_the_forecast_is_the_bound_and_the_raw_value_only_without_one():
    rows = corner_rows()
    raw = rows[-1].model_copy(update={"forecast_forgetting": None, "number": 99, "seed": 7})
    assert {r.number for r in stopped([*rows, raw])} == {r.number for r in rows if r.status is Status.PRUNED} | {99}


def test_a_stopped_trial_at_a_point_and_seed_that_also_ran_to_the_end_is_not_censored():
    rows = corner_rows()
    first = rows[0]
    again = first.model_copy(update={"number": 100, "status": Status.PRUNED, "forecast_forgetting": 0.1})
    assert 100 not in {r.number for r in stopped([*rows, again])}


def test_a_diverged_trial_with_non_finite_metrics_is_left_out():
    rows = corner_rows()
    diverged = rows[-1].model_copy(update={"number": 101, "status": Status.DIVERGED, "forgetting": float("nan"),
                                           "forecast_forgetting": None, "seed": 3})  # fmt: skip
    assert 101 not in {r.number for r in stopped([*rows, diverged])}


def test_the_validation_texts_error_widens_a_re_runs_spread_and_lowers_p_at_the_same_fit():
    rows = [r for r in corner_rows() if r.status is Status.COMPLETED]
    texted = [r.model_copy(update={"forgetting_text_error": 0.001 + 0.0002 * (r.number % 3)}) for r in rows]

    plain, measured = fit_surrogate(rows, SPACE), fit_surrogate(texted, SPACE)

    errors = np.array([r.forgetting_text_error for r in texted])
    assert (
        np.isclose(measured.fit.forgetting.text_sd, np.sqrt(np.mean(errors**2))) and plain.fit.forgetting.text_sd == 0
    )
    lr, share = [0.1, 0.15], [MixRatio.parse("2:1").domain_share] * 2
    (_, before), (_, after) = plain.predict(lr, share), measured.predict(lr, share)
    assert np.allclose(after.mean, before.mean) and np.allclose(after.sd, before.sd)  # the same surface
    # the pool the surface was fitted on, and a re-run's fresh text of the pool's size: twice its variance
    expected = np.sqrt(before.sd**2 + before.noise_sd**2 + 2 * measured.fit.forgetting.text_sd**2)
    assert np.allclose(after.remeasured_sd(), expected)
    assert (after.probability_at_most(0.006) < before.probability_at_most(0.006)).all()
