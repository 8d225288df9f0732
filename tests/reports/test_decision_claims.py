"""Every sentence the tool prints about its decision, held against the record it describes.

`audit` reads each line of the decision (reports/decision.py) and checks the claim it makes against best.json's own
figures, computed here from the raw fields (intervals, means, rounds), not through the code that wrote the line. It
runs on the default run's real trials (tests/reports/default_run_rows.json, the README's run), where two tried points
gain more than the pick but fail the budget rule, and on scripted sweeps covering every outcome of confirmation.
"""

from __future__ import annotations

import re

import pytest

from reports.decision import decision_lines
from sweep.choice.best import BestSummary, best_summary
from sweep.choice.confirmation import Outcome
from sweep.choice.observed import select
from sweep.study.row import TrialRow
from sweep.study.study import SweepPlan
from tests.reports.default_run import default_run
from tests.reports.test_decision import PLAN as SCRIPTED_PLAN
from tests.reports.test_decision import confirm, searched

POINT = r"([0-9.]+) @ ([0-9.]+:[0-9.]+)"


def summary_of(rows: list[TrialRow], plan: SweepPlan) -> BestSummary:
    return best_summary(select(rows, forgetting_budget=plan.forgetting_budget, space=plan.space), rows, plan)


def _comparison_at(summary: BestSummary, lr: str, mix: str):
    found = [c for c in summary.pick.comparisons if f"{c.point.lr_fraction:.4g}" == lr and c.point.mix == mix]
    assert len(found) == 1, f"the line names {lr} @ {mix}, which is no tried point of the record"
    return found[0]


def audit(summary: BestSummary, lines: list[str]) -> list[str]:
    """The claims among `lines` that the record contradicts (empty: every sentence holds)."""
    wrong = []
    pick, confirmation, budget = summary.pick, summary.confirmation, summary.evidence.forgetting_budget
    for line in (line.strip() for line in lines):
        if line == "every other tried point gains measurably less (90 % intervals of the difference exclude 0)":
            if not all(c.low > 0 for c in pick.comparisons):
                wrong.append(line)
        elif match := re.fullmatch(r"(\d+) of the (\d+) other tried points gain measurably less", line):
            if int(match[1]) != sum(c.low > 0 for c in pick.comparisons) or int(match[2]) != len(pick.comparisons):
                wrong.append(line)
        elif line.startswith("indistinguishable from it in domain_gain"):
            named = {(lr, mix) for lr, mix in re.findall(POINT, line.split(": ", 1)[1])}
            spanning = {(f"{c.point.lr_fraction:.4g}", c.point.mix) for c in pick.comparisons if c.low <= 0 <= c.high}
            if named != spanning:
                wrong.append(line)
        elif line.startswith("gain measurably more, passed over by the rule: "):
            wrong += _audit_passed_over(summary, line)
        elif match := re.fullmatch(r".*P\(a re-run within the budget\) ([0-9.]+)", line):
            if pick.probability_within_budget is None or f"{pick.probability_within_budget:.2f}" != match[1]:
                wrong.append(line)
        elif line.startswith("confirmation at fresh seeds: "):
            wrong += _audit_outcome(summary, line)
        elif "is at candidate" in line and "within the budget at its one seed, over it on the mean" in line:
            number, candidate = map(
                int, re.search(r"best observed trial \((\d+)\) is at candidate (\d+)", line).groups()
            )
            round_ = confirmation.rounds[candidate - 1]
            best = summary.best_observed
            if best.number != number or best.forgetting > budget or round_.forgetting.mean <= budget:
                wrong.append(line)
        elif line.startswith("pick: ") and " confirmed at " in line:
            held = confirmation.confirmed
            if confirmation.outcome is not Outcome.CONFIRMED or f"forgetting {held.forgetting.mean:.4f}" not in line:
                wrong.append(line)
    return wrong


def _audit_passed_over(summary: BestSummary, line: str) -> list[str]:
    pick = summary.pick
    wrong = []
    listed = line.split(": ", 1)[1]
    reasons = (
        r"P\(a re-run within the budget\) [0-9.]+ < [0-9.]+|its fresh seeds ended over the budget"
        r"|P [0-9.]+, but its lower-confidence domain_gain ranks below the pick's"
    )
    for lr, mix, why in re.findall(rf"([0-9.]+) @ ([0-9.]+:[0-9.]+) \(({reasons})\)", listed):
        comparison = _comparison_at(summary, lr, mix)
        if not comparison.high < 0:
            wrong.append(f"{line} [{lr} @ {mix} does not gain measurably more]")
        elif why.startswith("P(a re-run within the budget)"):
            if not comparison.probability_within_budget < pick.min_probability:
                wrong.append(f"{line} [{lr} @ {mix}'s P is not below the threshold]")
        elif why == "its fresh seeds ended over the budget":
            refused = [r for r in summary.confirmation.rounds if not r.within_budget]
            if not any(f"{r.lr_fraction:.4g}" == lr and r.mix == mix for r in refused):
                wrong.append(f"{line} [{lr} @ {mix} was not confirmed over the budget]")
    missing = [c for c in pick.comparisons if c.high < 0 and f"{c.point.lr_fraction:.4g} @ {c.point.mix}" not in listed]
    return wrong + [f"{line} [leaves out {c.point.lr_fraction:.4g} @ {c.point.mix}]" for c in missing]


def _audit_outcome(summary: BestSummary, line: str) -> list[str]:
    confirmation = summary.confirmation
    wrong = []
    for candidate in map(int, re.findall(r"candidate (\d+) \([^)]*\) held", line)):
        if not confirmation.rounds[candidate - 1].within_budget:
            wrong.append(f"{line} [candidate {candidate} did not hold]")
    if match := re.search(r"candidates? ([\d, ]+) ended over the budget", line):
        for candidate in map(int, match[1].split(", ")):
            if confirmation.rounds[candidate - 1].within_budget:
                wrong.append(f"{line} [candidate {candidate} held]")
    if line.endswith(": confirmed") and any(not point.within_budget for point in confirmation.rounds):
        wrong.append(f"{line} [says confirmed over a list whose candidate failed]")
    wrong += _audit_against(confirmation.confirmed, line) if confirmation.confirmed is not None else []
    return wrong


def _audit_against(point, line: str) -> list[str]:
    """ "held, domain_gain above its predicted interval [a, b]": the record's mean, against the interval it names."""
    wrong = []
    said = dict(re.findall(r"(domain_gain|forgetting) (above|below) its predicted interval", line))
    for name, against, interval, measured in (
        ("domain_gain", point.gain_against, point.gain_interval, point.gain),
        ("forgetting", point.forgetting_against, point.forgetting_interval, point.forgetting),
    ):
        side = None
        if interval is not None and measured is not None:
            side = "above" if measured.mean > interval[1] else "below" if measured.mean < interval[0] else None
        if said.get(name) != side or (against is not None and (against.value if side else "inside") != against.value):
            wrong.append(f"{line} [{name} is {side or 'inside'} its interval]")
    return wrong


def test_on_the_default_run_every_sentence_holds_though_two_tried_points_gain_more_than_the_pick():
    rows, plan = default_run()
    summary = summary_of(rows, plan)
    lines = decision_lines(summary)

    assert [f"{c.point.lr_fraction:.4g} @ {c.point.mix}" for c in summary.pick.comparisons if c.high < 0] == [
        "0.2016 @ 4:1",
    ]  # the scenario: the sentence "every other tried point gains measurably less" would be false here
    assert audit(summary, lines) == []
    assert any(line.strip().startswith("gain measurably more, passed over by the rule: 0.2016 @ 4:1") for line in lines)


def test_the_audit_catches_the_sentences_the_tool_used_to_print_on_the_default_run():
    rows, plan = default_run()
    summary = summary_of(rows, plan)

    printed_before = [
        "  every other tried point gains measurably less (90 % intervals of the difference exclude 0)",
        "  confirmation at fresh seeds: confirmed",
    ]
    flagged = audit(summary, printed_before)
    assert {got.split(" [")[0] for got in flagged} == {line.strip() for line in printed_before}
    # the confirmed candidate's means fell below their predicted intervals, which "confirmed" alone does not say
    assert any(got.endswith("[domain_gain is below its interval]") for got in flagged)


@pytest.mark.parametrize(
    "forgetting",
    [
        [(0.0150, 0.0170)],  # the first candidate holds
        [(0.0300, 0.0320), (0.0100, 0.0120)],  # the second does
        [(0.0300, 0.0320), (0.0400, 0.0420)],  # none does
        [(0.0150, 0.0300)],  # one seed within, the mean over
        [],  # pending
    ],
)
def test_every_sentence_holds_whatever_the_confirmation(forgetting):
    rows = searched()
    for pair in forgetting:
        rows = confirm(rows, pair)
    summary = summary_of(rows, SCRIPTED_PLAN)

    assert audit(summary, decision_lines(summary)) == []
