"""The bootstrap refits, and the forms' fits, in worker processes: refits shared among the credible forms by weight,
drawn in order from one seed, so that fitting them (and the forms) in worker processes gives the very fits one
process gives; a curve form's refits draw its curve."""

from __future__ import annotations

import pytest

from sweep.law import bootstrap, config
from sweep.law.config import LawSettings
from sweep.law.select import fit_forms
from tests.sweep.ladder.synthetic import draw


@pytest.fixture(scope="module")
def fitted():
    table = draw()
    return table, fit_forms(table, LawSettings(starts=4))


def test_worker_processes_fit_the_same_refits_as_one_process(fitted, monkeypatch):
    table, laws = fitted
    settings = LawSettings(starts=4, refits=24)
    alone = bootstrap.bootstrap_refits(table, laws, settings.model_copy(update={"workers": 1}))
    monkeypatch.setattr(config, "PARALLEL_WORK", 0)  # this small table's refits go to the workers too
    pooled = bootstrap.bootstrap_refits(table, laws, settings.model_copy(update={"workers": 2}))
    assert alone[1] == pooled[1] == 0
    assert [(form, law.model_dump()) for form, law in alone[0]] == [(form, law.model_dump()) for form, law in pooled[0]]


def test_worker_processes_fit_the_same_forms_as_one_process(fitted, monkeypatch):
    """Each form's full fit and its cross-validation go to the workers as one job: the weights, the fits and the
    discrepancy are those one process gives."""
    table, alone = fitted
    monkeypatch.setattr(config, "PARALLEL_WORK", 0)
    pooled = fit_forms(table, LawSettings(starts=4, workers=2))
    assert pooled.model_dump() == alone.model_dump()


def test_refits_are_shared_by_weight_and_a_curve_forms_refits_draw_their_curve(fitted):
    table, laws = fitted
    settings = LawSettings(starts=4, refits=40)
    refits, failed = bootstrap.bootstrap_refits(table, laws, settings)
    drawn = {fit.form: sum(form == fit.form for form, _ in refits) for fit in laws.credible}
    total = sum(fit.weight for fit in laws.credible)
    for fit in laws.credible:
        assert abs(drawn[fit.form] - 40 * fit.weight / total) < 1.0 + failed
    bent = [law for form, law in refits if form == "size-curve"]
    assert bent, "the known law's rows give the form that bends a weight: its refits are drawn"
    assert all(law.general.curve.draw == law.domain.curve.draw for law in bent)  # both losses bend with the models
    assert len({law.general.curve.draw for law in bent}) == len(bent)  # each refit its own draw
