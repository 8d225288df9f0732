"""Leave-one-rung-out: each rung predicted from the others, and a fold that fails when a rung breaks the law."""

from __future__ import annotations

import math

import pytest

from sweep.law.config import LawSettings
from sweep.law.optimum import SearchBox
from sweep.law.table import LawInputError, ObservationTable
from sweep.law.validate import leave_one_rung_out
from sweep.study.config import PickConfig
from tests.sweep.ladder.synthetic import RUNGS, TRUTH, draw

SETTINGS = LawSettings(starts=6, refits=4)
PICK = PickConfig()
THREE = {name: RUNGS[name] for name in ("s", "m", "l")}


def test_the_largest_rung_is_predicted_from_the_others():
    """The ladder's targets (docs/ladder.md): the largest rung's optimum lr_fraction within x1.3 and domain share
    within 0.07 of the one its own trials' law gives, predicted from three others (two would be too few to measure
    how the form's error grows beyond them: that fold is refused, test_law_predict.py)."""
    table = draw()
    folds = leave_one_rung_out(table, SearchBox.covering(table), 0.01, SETTINGS, PICK, held_out=["l"]).folds
    assert [fold.rung for fold in folds] == ["l"]
    largest = folds[0]
    assert largest.predicted.credible and largest.own_toward == []
    assert abs(math.log(largest.predicted.optimum.lr_fraction / largest.own.lr_fraction)) < math.log(1.3)
    assert abs(largest.predicted.optimum.domain_share - largest.own.domain_share) < 0.07
    assert largest.own_at_predicted.forgetting == pytest.approx(0.01, abs=0.002)
    assert largest.measured_at_predicted is None  # no trial ran there: the ladder will enqueue one


def test_a_rung_that_breaks_the_law_fails_its_fold():
    """The largest rung forgets three times what the others' law says: its own law's forgetting at the predicted
    point lies outside the prediction's interval."""
    general = TRUTH.general.model_copy(update={"values": TRUTH.general.values | {"shift": 0.6}})
    broken = TRUTH.model_copy(update={"general": general})
    rows = draw(rungs={"s": RUNGS["s"], "m": RUNGS["m"]}).rows + draw(broken, rungs={"l": RUNGS["l"]}, seed=1).rows
    table = ObservationTable.of(rows)
    fold = leave_one_rung_out(table, SearchBox.covering(table), 0.01, SETTINGS, PICK, held_out=["l"]).folds[0]
    assert fold.coverage.forgetting is False and not fold.coverage.complete
    assert fold.own_at_predicted.forgetting > 2 * fold.predicted.intervals.forgetting.high


def test_every_rung_is_held_out_in_turn_unless_named():
    """Without `held_out` each rung is a fold, smallest first; the report counts the folds its intervals cover."""
    table = draw(rungs=THREE)
    validation = leave_one_rung_out(
        table, SearchBox.covering(table), 0.01, SETTINGS.model_copy(update={"refits": 2}), PICK
    )
    assert [fold.rung for fold in validation.folds] == ["s", "m", "l"]
    assert validation.covered == sum(fold.coverage.complete for fold in validation.folds)


@pytest.mark.parametrize(
    ("rungs", "held_out", "message"),
    [
        ({"m": RUNGS["m"], "l": RUNGS["l"]}, None, "needs at least 3 rungs, so that the others span two sizes; got 2"),
        (THREE, ["xl"], "no rung named 'xl' to hold out; the rungs: s, m, l"),
    ],
)
def test_what_cannot_be_held_out_is_refused(rungs, held_out, message):
    table = draw(rungs=rungs)
    with pytest.raises(LawInputError, match=message):
        leave_one_rung_out(table, SearchBox.covering(table), 0.01, SETTINGS, PICK, held_out=held_out)
