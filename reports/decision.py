"""The decision in words: the headline (the pick and its confirmation, sweep/choice/verdict.py), the pick's predicted
figures and why it was chosen, how it compares with every tried point, each confirmed candidate, and one line on
the best observed trial when it is not the pick.

The end of `sweep run`, `sweep status`, the report's summary and its two figures of the decision all read it from
here. Every sentence states something the record holds (best.json's own figures): a sentence is said only when its
figures make it true, and tests/reports/test_decision_claims.py holds each one against the record.
"""

from __future__ import annotations

from sweep.choice.best import BestSummary
from sweep.choice.confirmation import Against, Confirmation, ConfirmedPoint, Outcome
from sweep.choice.pick import Comparison, Pick, PickSource
from sweep.choice.surrogate import point_key
from sweep.choice.verdict import measured_words, numbers


def pick_lines(pick: Pick, *, headline: str | None = None) -> list[str]:
    """The pick in words: `headline` (else the point and where it comes from), its predicted figures, why, and how
    every tried point compares with it."""
    if pick.source is None or pick.point is None:
        return [headline or f"pick: none ({pick.reason})"]
    point = pick.point
    if headline is None:
        where = f"lr_fraction {point.lr_fraction:.4g}, mix {point.mix}"
        if point.trials:
            where += f" (trial{'s' if len(point.trials) > 1 else ''} {numbers(point.trials)})"
        headline = f"pick ({'surrogate' if pick.source is PickSource.SURROGATE else 'best observed trial'}): {where}"
    lines = [headline]
    if pick.gain is not None and pick.forgetting is not None:
        gain, forgetting = pick.gain, pick.forgetting
        lines.append(
            f"  predicted domain_gain {gain.mean:.4f} [{gain.low:.4f}, {gain.high:.4f}], forgetting "
            f"{forgetting.mean:.4f} [{forgetting.low:.4f}, {forgetting.high:.4f}] (90 % intervals, the text included); "
            f"P(a re-run within the budget) {pick.probability_within_budget:.2f}"
        )
    for task, drop in sorted(pick.downstream.items()):
        lines.append(
            f"  predicted {task} drop {drop.mean:+.4f} [{drop.low:+.4f}, {drop.high:+.4f}]; P(a re-run within its "
            f"downstream budget) {drop.probability_within_budget:.2f}"
        )
    lines.append(f"  why: {pick.reason}")
    return lines + [f"  {line}" for line in comparison_lines(pick)]


def comparison_lines(pick: Pick) -> list[str]:
    """How the tried points compare with the pick in domain_gain (the 90 % interval of the difference): measurably
    less, indistinguishable, or measurably more, and then why the rule passed them over."""
    comparisons = pick.comparisons
    if not comparisons:
        return []
    if all(c.gains_less for c in comparisons):
        return ["every other tried point gains measurably less (90 % intervals of the difference exclude 0)"]
    lines = []
    less = [c for c in comparisons if c.gains_less]
    if less:
        lines.append(f"{len(less)} of the {len(comparisons)} other tried points gain measurably less")
    if pick.indistinguishable:
        lines.append(
            "indistinguishable from it in domain_gain (90 % interval of the difference spans 0): "
            + ", ".join(_where(c) for c in pick.indistinguishable)
        )
    if pick.gaining_more:
        lines.append(
            "gain measurably more, passed over by the rule: "
            + ", ".join(_passed_over(c, pick) for c in pick.gaining_more)
        )
    return lines


def _passed_over(comparison: Comparison, pick: Pick) -> str:
    """Why the rule did not pick a point that gains more: the figure that kept it out."""
    p = comparison.probability_within_budget
    if comparison.excluded:
        why = "its fresh seeds ended over the budget"
    elif p < pick.min_probability:
        why = f"P(a re-run within the budget) {p:.2f} < {pick.min_probability:g}"
    elif comparison.probability_within_budgets is not None and comparison.probability_within_budgets < pick.min_probability:
        why = (
            f"P(a re-run within the forgetting budget) {p:.2f}, but within it and the downstream budget(s) "
            f"{comparison.probability_within_budgets:.2f} < {pick.min_probability:g}"
        )
    else:
        why = f"P {p:.2f}, but its lower-confidence domain_gain ranks below the pick's"
    return f"{_where(comparison)} ({why})"


def _where(comparison: Comparison) -> str:
    return f"{comparison.point.lr_fraction:.4g} @ {comparison.point.mix}"


def decision_lines(summary: BestSummary) -> list[str]:
    """The headline, the pick's figures and comparisons, its confirmation and the line on the best observed trial."""
    lines = pick_lines(summary.pick, headline=summary.verdict)
    if summary.pick.point is None:
        return lines
    lines += confirmation_lines(summary.confirmation, summary.evidence.forgetting_budget)
    note = why_not_best_observed(summary)
    return lines + [f"  {note}"] if note else lines


def confirmation_lines(confirmation: Confirmation, budget: float) -> list[str]:
    """The outcome, then each candidate confirmed: its fresh seeds' mean ± sd against what was predicted."""
    return [f"  confirmation at fresh seeds: {outcome_words(confirmation)}"] + [
        f"    {round_line(point, budget)}" for point in confirmation.rounds
    ]


def outcome_words(confirmation: Confirmation) -> str:
    """Which candidate held and which did not; "held" is said only of a candidate whose fresh seeds kept the budget."""
    over = [point for point in confirmation.rounds if not point.within_budget]
    failed = (
        f"candidate{'s' if len(over) > 1 else ''} {numbers([point.round + 1 for point in over])} ended over the budget"
    )
    match confirmation.outcome:
        case Outcome.CONFIRMED:
            held = confirmation.confirmed
            words = f"candidate {held.round + 1} ({held.lr_fraction:.4g} @ {held.mix}) held"
            outside = against_words(held)
            words = f"{words}, {outside}" if outside else words
            return f"{words}; {failed}" if over else words
        case Outcome.NOT_FOUND:
            return f"no candidate held ({failed}; promote only with --unconfirmed)" if over else confirmation.reason
        case Outcome.PENDING:
            return f"pending ({confirmation.reason})" + (f"; {failed}" if over else "")
        case _:
            return "off (search.confirmation.seeds is 0), the pick was not re-run"


def round_line(point: ConfirmedPoint, budget: float) -> str:
    """One confirmed candidate: where, its fresh seeds' mean ± sd on its draw against predicted, and the verdict."""
    where = f"candidate {point.round + 1} ({point.lr_fraction:.4g} @ {point.mix}), trials {numbers(point.trials)}"
    if point.gain is None or point.forgetting is None:
        return f"{where}: no confirmation trial completed"
    line = (
        f"{where}: at fresh seeds on {point.text or 'its draw'} {measured_words(point, budget, with_prediction=True)}"
    )
    outside = against_words(point)
    return f"{line}; {outside}" if outside else line


def against_words(point: ConfirmedPoint) -> str | None:
    """Which of a candidate's measured means fell outside the 90 % interval predicted for it, and on which side
    ("domain_gain above its predicted interval [0.1955, 0.2065]"); None when both fell inside (or none was
    predicted)."""
    said = [
        f"{name} {against.value} its predicted interval [{interval[0]:.4f}, {interval[1]:.4f}]"
        for name, against, interval in (
            ("domain_gain", point.gain_against, point.gain_interval),
            ("forgetting", point.forgetting_against, point.forgetting_interval),
        )
        if against is not None and against is not Against.INSIDE and interval is not None
    ]
    return " and ".join(said) if said else None


def why_not_best_observed(summary: BestSummary) -> str | None:
    """One line: why the pick differs from the best observed trial (confirmation moving it, the surrogate
    preferring another point), or that it is the best observed trial's point. None when there is no pick."""
    pick, best = summary.pick, summary.best_observed
    if pick.point is None:
        return None
    budget = summary.evidence.forgetting_budget
    moved = _moved_by_confirmation(summary.confirmation, budget)
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


def _moved_by_confirmation(confirmation: Confirmation, budget: float) -> str | None:
    """What the candidates that ended over the budget measured, when they moved the pick (or left none)."""
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
        f"({point.lr_fraction:.4g} @ {point.mix}) forgetting at fresh seeds {point.forgetting.mean:.4f} > budget "
        f"{budget:g}"
    )


def _against_best(pick: Pick, best: int, comparison: Comparison | None) -> str:
    what = "a point no search trial tried" if not pick.point.trials else f"trial {numbers(pick.point.trials)}'s point"
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
