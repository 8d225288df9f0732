"""Why the law gives no number to promote, first reason first, each saying which it is and what would help: the form
misses its rungs by more than its discrepancy term carries, the rungs are too few or too close in N to say how the
law or its error moves to the target (and which rung would), nothing measures P, the truth may lie outside the
searched box, or no point keeps the budget with the rule's probability (because of the form's error, and then which
rung nearer the target would let one, or even without it; or not even the law's own forgetting, and then whether
the rungs' size keeps it, which says the law's N-dependence refuses and a rung toward the target would test it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from sweep.law.config import LawSettings
from sweep.law.discrepancy import MIN_SIZES, MIN_SPAN, STEP, Discrepancy
from sweep.law.noise import MISFIT
from sweep.law.optimum import Point, Refusal
from sweep.law.prediction import TargetPrediction
from sweep.law.published import FORGETTING_TREND
from sweep.law.select import Laws


@dataclass(frozen=True)
class Least:
    """The least forgetting the law predicts near the searched box: at the target, and (asked only when a refusal
    needs it) at another N with the target's tokens and schedule."""

    target: float
    at: Callable[[float], float]


Reach = Callable[[float], float]
"""The largest P inside the searched box at a given relative sd of forgetting's discrepancy (sweep.law.lattice)."""


def refusal(
    prediction: TargetPrediction,
    laws: Laws,
    least: Least,
    beyond: list[list[str]],
    settings: LawSettings,
    reach: Reach,
) -> Refusal | None:
    """The first reason the prediction cannot be promoted, or None; `beyond` holds each refit's directions to a
    materially better point beyond the box (sweep.law.lattice)."""
    name, best = prediction.target.name, laws.best
    if not best.misfit.fits:
        return Refusal(
            kind="form_error",
            message=f"the law does not fit these runs ({best.misfit.line()}; best form {best.form}, more than "
            f"{MISFIT:g} times the noise, more than its discrepancy term is meant to carry): no rung added to these "
            f"would make the forms follow them; rung {best.misfit.rung}, missed worst, is the one to look at (a base "
            "pretrained unlike the others', a batch too small for its noise)",
        )
    rungs = _rungs(prediction, laws.discrepancy)
    if rungs is not None:
        return rungs
    if prediction.refits == 0:
        return Refusal(
            kind="no_credible_prediction",
            message=f"no credible prediction at {name}: P(forgetting <= budget) is measured by bootstrap refits, and "
            "none were made (--refits 0 / ladder.law.refits 0)",
        )
    threshold = prediction.pick.min_probability
    plain, carried = prediction.plain_inside_probability, prediction.inside_probability
    if plain is not None and carried is not None and carried < threshold <= plain:
        return _form_error(prediction, laws.discrepancy, reach)
    point = prediction.optimum or prediction.mean_optimum
    if point is not None and prediction.toward:
        return Refusal(
            kind="extend_space",
            message=f"extend the space toward {' and '.join(prediction.toward)}: the law's optimum at {name}, "
            f"{_where(point)}, lies outside the searched box",
        )
    if prediction.optimum is None:
        return _below_threshold(prediction, laws.discrepancy, least)
    return _astray(prediction, beyond, settings)


def _where(point: Point) -> str:
    return f"lr_fraction {point.lr_fraction:.3g} and mix {point.mix} (domain share {point.domain_share:.3g})"


def _rungs(prediction: TargetPrediction, discrepancy: Discrepancy) -> Refusal | None:
    """add_rung when the target lies beyond the rungs and they span too little of N, or are too few to measure how
    the form's error grows (the rung that would help: STEP decades beyond the nearest toward the target)."""
    carried, name = prediction.discrepancy, prediction.target.name
    if carried is None or carried.distance <= 0.0:
        return None
    toward = discrepancy.toward(prediction.target.parameters, STEP)
    sizes = len(discrepancy.sizes)
    if sizes >= 2 and discrepancy.span < MIN_SPAN:
        return Refusal(
            kind="add_rung",
            message=f"the rungs are too close in N to say how the losses move with it: they span "
            f"{discrepancy.span:.2f} decades (less than {MIN_SPAN:g}), and {name} lies {carried.distance:.1f} "
            f"beyond; a rung at N = {toward:.3g} ({STEP:g} decades beyond the nearest, toward {name}) would help",
            add_rung_at=toward,
        )
    if not carried.growth_known:
        return Refusal(
            kind="add_rung",
            message=f"the rungs are too few to say how the form's error grows beyond them: {sizes} model size(s), "
            f"where it takes {MIN_SIZES} (one held out, two to extrapolate from), and {name} lies "
            f"{carried.distance:.1f} decades beyond the nearest; a rung at N = {toward:.3g} ({STEP:g} decades beyond "
            f"the nearest, toward {name}) would help",
            add_rung_at=toward,
        )
    return None


def _form_error(prediction: TargetPrediction, discrepancy: Discrepancy, reach: Reach) -> Refusal:
    """form_error: the refits alone reach the rule's P inside the searched box but not once the form's error is
    carried; and the rung nearest the rungs (in steps of STEP decades toward the target) whose smaller error would
    let a point reach it, if the law missed it as it misses the held-out rungs and the levels bent no further than the
    curve carries them (its term shortened in proportion to the distance left), or that none would."""
    name, pick, carried = prediction.target.name, prediction.pick, prediction.discrepancy
    forgetting, parameters = discrepancy.forgetting, prediction.target.parameters
    best = prediction.inside_probability or 0.0
    said = (
        f"no point inside the searched box keeps forgetting at {name} within the budget "
        f"{prediction.forgetting_budget:.4g} with P >= {pick.min_probability:g} once the form's error is carried: the "
        f"law misses its rungs by {forgetting.within:.2g} of forgetting beyond the noise, growing "
        f"{forgetting.growth or 0.0:.2g} a decade beyond them (the held-out rungs), and its rungs' levels may bend "
        f"from a power of N by {forgetting.bend(parameters):.2g} at {name}: "
        f"{carried.forgetting:.2g} in all there, {carried.distance:.1f} decades beyond the nearest rung; the most any "
        f"point in the box reaches is {best:.2f} (the refits alone: {prediction.plain_inside_probability:.2f})"
    )
    for step in range(1, int(carried.distance / STEP) + 2):
        nearer = max(0.0, carried.distance - step * STEP)
        sd = forgetting.sd(nearer, parameters, bend_scale=nearer / carried.distance)
        reached = reach(sd) if sd is not None else 0.0
        if reached >= pick.min_probability:
            at = discrepancy.toward(parameters, carried.distance - nearer)
            where = (
                f"a rung at N = {at:.3g} ({carried.distance - nearer:.1f} decades beyond the nearest, toward {name})"
                if nearer > 0.0
                else f"only runs at {name}'s own size (N = {at:.3g}), no rung between,"
            )
            return Refusal(
                kind="form_error",
                message=f"{said}; {where} would, if the law missed it as it misses the held-out rungs, bring that "
                f"error to {sd:.2g} and let a point in the box reach P {reached:.2f}",
                add_rung_at=at,
            )
    at_target = forgetting.sd(0.0, parameters, bend_scale=0.0)
    return Refusal(
        kind="form_error",
        message=f"{said}; no rung would: even at {name} itself the error at the rungs ({at_target:.2g}) leaves the "
        f"most any point in the box reaches at {reach(at_target):.2f}",
    )


def _below_threshold(prediction: TargetPrediction, discrepancy: Discrepancy, least: Least) -> Refusal:
    name, pick, budget = prediction.target.name, prediction.pick, prediction.forgetting_budget
    mean = prediction.mean_optimum
    if mean is None:
        return _over_budget(prediction, discrepancy, least)
    best = prediction.best_probability or 0.0
    at_mean = "unknown" if prediction.mean_within_budget is None else f"{prediction.mean_within_budget:.2f}"
    return Refusal(
        kind="no_credible_prediction",
        message=f"no credible prediction at {name}: no point keeps forgetting within the budget {budget:.4g} with "
        f"P >= {pick.min_probability:g} (objective.pick.min_probability), even without the form's error; the most "
        f"any point reaches is {best:.2f}, and the mean-constrained optimum (lr_fraction {mean.lr_fraction:.3g}, "
        f"mix {mean.mix}) has P {at_mean}",
    )


def _over_budget(prediction: TargetPrediction, discrepancy: Discrepancy, least: Least) -> Refusal:
    """No point near the box keeps the law's own forgetting within the budget at the target; what would help: where
    the rungs' size keeps it and the target's does not, the law's N-dependence refuses, and a rung nearer the target
    would say whether it holds; where neither does, no rung would, only a looser budget."""
    name, budget, parameters = prediction.target.name, prediction.forgetting_budget, prediction.target.parameters
    said = (
        f"no credible prediction at {name}: no lr_fraction and mix near the searched box keep forgetting within the "
        f"budget {budget:.4g}; the least the law predicts is {least.target:.4g}"
    )
    nearest = discrepancy.toward(parameters, 0.0)
    at_rungs = least.at(nearest)
    if at_rungs <= budget and discrepancy.distance(parameters) > 0.0:
        at = discrepancy.toward(parameters, STEP)
        return Refusal(
            kind="no_credible_prediction",
            message=f"{said}, where at the rungs' nearest size (N = {nearest:.3g}), with {name}'s tokens, it is "
            f"{at_rungs:.4g}, within it: the law's forgetting grows with N toward {name}, against the published "
            f"trend that {FORGETTING_TREND}; a rung at N = {at:.3g} ({STEP:g} decades "
            f"beyond the nearest, toward {name}) would say whether it does",
            add_rung_at=at,
        )
    return Refusal(
        kind="no_credible_prediction",
        message=f"{said}, and {at_rungs:.4g} at the rungs' nearest size (N = {nearest:.3g}) with {name}'s tokens: "
        f"no rung would help, only a budget above that (objective.forgetting_budget)",
    )


def _astray(prediction: TargetPrediction, beyond: list[list[str]], settings: LawSettings) -> Refusal | None:
    name, point = prediction.target.name, prediction.optimum
    astray = prediction.refits_outside + prediction.refits_without
    refits = prediction.refits
    if not refits or astray <= settings.outside_limit * refits:
        return None
    share = f"{astray} of {refits} bootstrap refits ({astray / refits:.0%})"
    sides = Counter(side for toward in beyond for side in toward)
    common = [side for side, count in sides.most_common() if count > astray / 2]
    if common and prediction.refits_outside >= prediction.refits_without:
        return Refusal(
            kind="extend_space",
            message=f"extend the space toward {' and '.join(common)}: {share} put a point beyond the searched box "
            f"that gains more over their best inside it at {name} than the noise and the form's error account for "
            f"(the answer is inside, at {_where(point)})",
        )
    return Refusal(
        kind="no_credible_prediction",
        message=f"no credible prediction at {name}: {share} put a better point beyond the searched box or find none "
        f"that keeps the budget (the answer is at {_where(point)}), more than the "
        f"{settings.outside_limit:.0%} a prediction may lose",
    )
