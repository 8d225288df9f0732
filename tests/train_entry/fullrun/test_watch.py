"""The forgetting watch on scripted evaluations: it trips on the second overshoot in a row, not on one, and says
"no credible prediction" outside the predicted trajectory rather than holding the run to its last bound."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from tests.train_entry.fullrun.predictions import straight
from train_entry.fullrun.watch import ForgettingWatch, PredictedPoint, PredictedTrajectory
from train_entry.trial_config import BaseLosses, Metrics

BASE = BaseLosses(domain_loss=2.0, general_loss=2.5)
PREDICTION = straight(
    1000, end=0.01, upper_start=0.01, upper_end=0.03, source="the proxies' curves scaled by tokens (an extrapolation)"
)


def _general_loss(forgetting: float) -> float:
    return BASE.general_loss * (1 + forgetting)


def _watch(forgettings: list[tuple[int, float]]):
    watch = ForgettingWatch(PREDICTION)
    return [
        watch.judge(
            Metrics.measure(
                base=BASE, step=i, tokens_seen=tokens, domain_loss=1.8, general_loss=_general_loss(f), train_loss=1.9,
                lr=1e-4,
            )
        )
        for i, (tokens, f) in enumerate(forgettings)
    ]  # fmt: skip


def test_measures_gain_and_forgetting_in_the_proxies_definitions():
    (seen,) = _watch([(500, 0.015)])
    assert seen.metrics.forgetting == pytest.approx(0.015)
    assert seen.metrics.domain_gain == pytest.approx(1 - 1.8 / 2.0)
    assert seen.upper == pytest.approx(0.02)  # halfway between 0.01 and 0.03


def test_trips_on_two_overshoots_in_a_row_and_not_on_one():
    seen = _watch([(200, 0.05), (400, 0.0), (600, 0.05), (800, 0.06), (900, 0.0)])
    assert [e.overshoots for e in seen] == [1, 0, 1, 2, 0]
    assert [e.tripped for e in seen] == [False, False, False, True, False]
    assert seen[3].line().startswith("WARNING: iteration 3, 800 tokens: forgetting 0.0600")
    assert "exceeds the predicted upper bound 0.0260 (2 evaluation(s) in a row" in seen[3].line()
    assert "within the predicted upper bound" in seen[1].line()


def test_a_diverged_evaluation_counts_as_an_overshoot():
    seen = _watch([(200, math.inf), (400, math.nan)])
    assert seen[-1].tripped


def test_outside_the_prediction_there_is_no_credible_prediction_and_no_overshoot():
    seen = _watch([(900, 0.5), (2000, 0.5), (2500, 0.5)])
    assert [e.upper is None for e in seen] == [False, True, True]
    assert not any(e.tripped for e in seen)
    assert "no credible prediction at these tokens" in seen[1].line()


@pytest.mark.parametrize(
    "points",
    [
        [PredictedPoint(tokens=10, forgetting=0, forgetting_upper=0.1)] * 2,  # tokens not increasing
        [
            PredictedPoint(tokens=0, forgetting=0.1, forgetting_upper=0.0),  # the bound below the prediction
            PredictedPoint(tokens=1, forgetting=0.1, forgetting_upper=0.2),
        ],
    ],
)
def test_a_malformed_prediction_is_refused(points):
    with pytest.raises(ValidationError):
        PredictedTrajectory(source="law", level=0.9, points=points)
