"""The decision in words: the pick with its intervals and its confirmation, the best observed trial, and one line
saying why the pick is not the best observed trial when it is not.

The end of `sweep run`, `sweep status`, the report's summary and its two figures of the decision (the Pareto plot,
the surrogate plot) all read it from here, so a reader meets one pick and one best observed trial, each named for
what it is, and never two unexplained winners.
"""

from __future__ import annotations

from sweep.choice.best import BestSummary
from sweep.choice.confirmation import Confirmation, ConfirmedPoint, Measured, Outcome
from sweep.choice.pick import Comparison, Pick, PickSource
from sweep.choice.surrogate import point_key

OUTCOME_WORDS = {
    Outcome.CONFIRMED: "confirmed",
    Outcome.NOT_FOUND: "no confirmed point (promote only with --unconfirmed)",
    Outcome.PENDING: "pending",
    Outcome.OFF: "off (search.confirmation.seeds is 0), the pick was not re-run",
}


def pick_lines(pick: Pick) -> list[str]:
    """The pick in words: the point and where it comes from, its predicted figures, why, and which tried
    points the trials cannot tell from it."""
    if pick.source is None or pick.point is None:
        return [f"pick: none ({pick.reason})"]
    point = pick.point
    where = f"lr_fraction {point.lr_fraction:.4g}, mix {point.mix}"
    if point.trials:
        where += f" (trial{'s' if len(point.trials) > 1 else ''} {', '.join(map(str, point.trials))})"
    lines = [f"pick ({'surrogate' if pick.source is PickSource.SURROGATE else 'best observed trial'}): {where}"]
    if pick.gain is not None and pick.forgetting is not None:
        gain, forgetting = pick.gain, pick.forgetting
        lines.append(
            f"  predicted domain_gain {gain.mean:.4f} [{gain.low:.4f}, {gain.high:.4f}], forgetting "
            f"{forgetting.mean:.4f} [{forgetting.low:.4f}, {forgetting.high:.4f}] (90 % intervals); "
            f"P(a re-run within the budget) {pick.probability_within_budget:.2f}"
        )
    lines.append(f"  why: {pick.reason}")
    if pick.comparisons:
        same = [f"{c.point.lr_fraction:.4g} @ {c.point.mix}" for c in pick.indistinguishable]
        lines.append(
            "  indistinguishable from it (90 % interval of the gain difference spans 0): " + ", ".join(same)
            if same
            else "  every other tried point gains measurably less (90 % intervals of the difference exclude 0)"
        )
    return lines


def decision_lines(summary: BestSummary) -> list[str]:
    """The pick's lines, its confirmation and the line on the best observed trial."""
    lines = pick_lines(summary.pick)
    if summary.pick.point is None:
        return lines
    lines += confirmation_lines(summary.confirmation, summary.evidence.forgetting_budget)
    note = why_not_best_observed(summary)
    return lines + [f"  {note}"] if note else lines


def confirmation_lines(confirmation: Confirmation, budget: float) -> list[str]:
    """The outcome, then each point confirmed: its fresh seeds' mean ± sd against what was predicted."""
    head = f"  confirmation at fresh seeds: {OUTCOME_WORDS[confirmation.outcome]}"
    if confirmation.outcome is Outcome.PENDING:
        head += f" ({confirmation.reason})"
    return [head] + [f"    {round_line(point, budget)}" for point in confirmation.rounds]


def round_line(point: ConfirmedPoint, budget: float) -> str:
    """One confirmed candidate: where, measured mean ± sd against predicted, and the verdict."""
    where = f"candidate {point.round + 1} ({point.lr_fraction:.4g} @ {point.mix}), trials {_numbers(point.trials)}"
    if point.gain is None or point.forgetting is None:
        return f"{where}: no confirmation trial completed"
    predicted = (
        f" (predicted {point.predicted_gain:.4f}, {point.predicted_forgetting:.4f})"
        if point.predicted_gain is not None and point.predicted_forgetting is not None
        else ""
    )
    verdict = "within" if point.within_budget else "over"
    return (
        f"{where}: confirmed domain_gain {spread(point.gain)}, forgetting {spread(point.forgetting)}{predicted}, "
        f"{verdict} the budget {budget:g}"
    )


def why_not_best_observed(summary: BestSummary) -> str | None:
    """One line: why the pick differs from the best observed trial (confirmation moving it, the surrogate
    preferring another point), or that it is the best observed trial's point. None when there is no pick."""
    pick, best = summary.pick, summary.best_observed
    if pick.point is None:
        return None
    budget = summary.evidence.forgetting_budget
    moved = _moved_by_confirmation(summary.confirmation, pick, budget)
    if best is None:
        line = "there is no best observed trial (no completed trial is within the budget)"
        if pick.probability_within_budget is not None:
            line += f"; the surrogate puts the pick within it with P={pick.probability_within_budget:.2f}"
    elif point_key(pick.point.lr_fraction, pick.point.domain_share) == point_key(best.lr_fraction, best.domain_share):
        line = f"the pick is the best observed trial's point (trial {best.number})"
    elif refused := _refused_at(summary.confirmation, best.lr_fraction, best.domain_share):
        line = (
            f"the best observed trial ({best.number}) is at candidate {refused.round + 1}'s point: within the budget "
            f"at its one seed, over it on the mean of its fresh seeds"
        )
    else:
        line = _against_best(pick, best.number, _comparison(pick, best.lr_fraction, best.domain_share))
    return f"{moved}; {line}" if moved else line


def _moved_by_confirmation(confirmation: Confirmation, pick: Pick, budget: float) -> str | None:
    """What the candidates confirmed over the budget said, when they moved the pick (or left none)."""
    refused = [point for point in confirmation.rounds if not point.within_budget]
    if not refused:
        return None
    said = "; ".join(f"candidate {point.round + 1}'s {_over(point, budget)}" for point in refused)
    if confirmation.outcome is Outcome.NOT_FOUND:
        return f"no candidate held at fresh seeds: {said}"
    return f"confirmation moved the pick to candidate {len(refused) + 1}: {said}"


def _refused_at(confirmation: Confirmation, lr_fraction: float, domain_share: float) -> ConfirmedPoint | None:
    """The candidate confirmed over the budget at this point, if one was."""
    key = point_key(lr_fraction, domain_share)
    return next(
        (p for p in confirmation.rounds if not p.within_budget and point_key(p.lr_fraction, p.domain_share) == key),
        None,
    )


def _over(point: ConfirmedPoint, budget: float) -> str:
    if point.forgetting is None:
        return f"({point.lr_fraction:.4g} @ {point.mix}) confirmation trials did not complete"
    return (
        f"({point.lr_fraction:.4g} @ {point.mix}) confirmed forgetting {point.forgetting.mean:.4f} > budget {budget:g}"
    )


def _against_best(pick: Pick, best: int, comparison: Comparison | None) -> str:
    what = "a point no search trial tried" if not pick.point.trials else f"trial {_numbers(pick.point.trials)}'s point"
    if comparison is None or pick.probability_within_budget is None:
        return f"the pick is {what}, not the best observed trial's ({best}): {pick.reason}"
    difference = f"{comparison.gain_difference:+.4f} [{comparison.low:+.4f}, {comparison.high:+.4f}]"
    probability = f"P={pick.probability_within_budget:.2f}"
    if comparison.gain_difference > 0:
        return (
            f"the pick is {what}: the surrogate predicts {difference} domain_gain over the best observed trial "
            f"({best})'s point, within budget ({probability})"
        )
    return (
        f"the pick is {what}: trial {best} measured more at its one seed, but the surrogate, fitted to every trial, "
        f"predicts the pick {difference} domain_gain against that point and ranks it first under the rule, within "
        f"budget ({probability})"
    )


def _comparison(pick: Pick, lr_fraction: float, domain_share: float) -> Comparison | None:
    key = point_key(lr_fraction, domain_share)
    return next((c for c in pick.comparisons if point_key(c.point.lr_fraction, c.point.domain_share) == key), None)


def spread(measured: Measured) -> str:
    return f"{measured.mean:.4f}" if measured.sd is None else f"{measured.mean:.4f} ± {measured.sd:.4f}"


def _numbers(numbers: list[int]) -> str:
    return ", ".join(map(str, numbers))
