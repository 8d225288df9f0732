"""The decision in one sentence, the headline of every surface (best.json's `verdict`, `sweep run` and `sweep status`,
the report, the W&B sweep run, the Optuna study): the pick, what its confirmation at fresh seeds measured, or why
there is no pick to promote.

Computed from the pick and its confirmation record alone, so the sentence can be checked against the record it
describes (tests/reports/test_decision.py holds each case against it).
"""

from __future__ import annotations

from sweep.choice.confirmation import Confirmation, ConfirmedPoint, Measured, Outcome
from sweep.choice.feasible import is_feasible
from sweep.choice.pick import Pick, PickSource
from train_entry.optimizer import peak_lr


def headline(pick: Pick, confirmation: Confirmation, *, budget: float, max_lr: float) -> str:
    """One sentence: the confirmed pick with its fresh seeds' figures; an unconfirmed one and why; or no pick."""
    if pick.point is None:
        return f"no pick: {pick.reason}"
    where = point_words(pick, max_lr=max_lr) + (f", {pick.bound_by}" if pick.bound_by else "")
    outcome = confirmation.outcome
    if outcome is Outcome.CONFIRMED:
        held = confirmation.confirmed
        return (
            f"pick: {where}, confirmed at {len(held.trials)} fresh seed(s) on fresh validation text ({held.text or 'a draw'}"
            f", trials {numbers(held.trials)}): {measured_words(held, budget)}"
        )
    if outcome is Outcome.NOT_FOUND:
        if not confirmation.rounds:
            return f"no confirmed pick: {confirmation.reason}"
        return (
            f"no confirmed pick: none of the {len(confirmation.rounds)} candidate(s) confirmed at fresh seeds held "
            f"the budget {budget:g} (the last, {where}, is promoted only with --unconfirmed)"
        )
    if outcome is Outcome.PENDING:
        return f"pick awaiting confirmation at fresh seeds: {where} ({confirmation.reason})"
    return f"pick, not confirmed (search.confirmation.seeds is 0): {where}, {_expected(pick, budget)}"


def point_words(pick: Pick, *, max_lr: float) -> str:
    """Where the pick is and where it comes from: "lr_fraction 0.134 (peak LR 0.000402), mix 4:1, of the surrogate"."""
    point = pick.point
    source = (
        "of the surrogate"
        if pick.source is PickSource.SURROGATE
        else "the best observed trial's point (surrogate could not pick)"
    )
    return f"lr_fraction {point.lr_fraction:.4g} (peak LR {peak_lr(point.lr_fraction, max_lr=max_lr):.3g}), mix {point.mix}, {source}"


def measured_words(point: ConfirmedPoint, budget: float, *, with_prediction: bool = False) -> str:
    """A confirmed candidate's fresh seeds' mean ± sd (and, `with_prediction`, what the surrogate predicted when it
    was chosen) and its verdict against the budget."""
    if point.gain is None or point.forgetting is None:
        return "no confirmation trial completed"
    predicted = ""
    if with_prediction and point.predicted_gain is not None and point.predicted_forgetting is not None:
        gain, forgetting = f"{point.predicted_gain:.4f}", f"{point.predicted_forgetting:.4f}"
        if point.gain_interval is not None and point.forgetting_interval is not None:
            gain += f" [{point.gain_interval[0]:.4f}, {point.gain_interval[1]:.4f}]"
            forgetting += f" [{point.forgetting_interval[0]:.4f}, {point.forgetting_interval[1]:.4f}]"
        predicted = f" (predicted {gain}, {forgetting})"
    if point.drops:  # a downstream budget too: which of the budgets the fresh seeds held
        drops = "".join(f", {task} drop {spread(drop)}" for task, drop in sorted(point.drops.items()))
        if not is_feasible(point.forgetting.mean, budget):
            held = f"over the forgetting budget {budget:g}"
        elif point.within_budget:
            held = f"within the forgetting budget {budget:g} and the downstream budget(s)"
        else:
            held = f"within the forgetting budget {budget:g} but over a downstream budget"
        return f"domain_gain {spread(point.gain)}, forgetting {spread(point.forgetting)}{predicted}{drops}: {held}"
    verdict = "within" if point.within_budget else "over"
    return (
        f"domain_gain {spread(point.gain)}, forgetting {spread(point.forgetting)}{predicted}, {verdict} the budget "
        f"{budget:g}"
    )


def _expected(pick: Pick, budget: float) -> str:
    if pick.forgetting is not None and pick.gain is not None:
        return (
            f"predicted domain_gain {pick.gain.mean:.4f}, forgetting {pick.forgetting.mean:.4f}, P(a re-run within "
            f"the budget {budget:g}) {pick.probability_within_budget:.2f}"
        )
    point = pick.point
    return f"measured at one seed: domain_gain {point.measured_gain:.4f}, forgetting {point.measured_forgetting:.4f}"


def spread(measured: Measured) -> str:
    return f"{measured.mean:.4f}" if measured.sd is None else f"{measured.mean:.4f} ± {measured.sd:.4f}"


def numbers(values: list[int]) -> str:
    return ", ".join(map(str, values))
