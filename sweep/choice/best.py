"""best.json: the decision in one sentence, the pick and its confirmation, the trials at its point and what it rests
on; then the evidence: the best observed trial, the Pareto front and what the sweep cost.

Written by `sweep run` as a BestSummary and read back through the same type by promotion and
reports, so a key is never looked up by a string that could drift.
"""

from __future__ import annotations

from pydantic import Field

from sweep.choice.confirmation import OFF, Confirmation, Outcome, Setting, confirmation_state
from sweep.choice.observed import Selection, ranked_completed
from sweep.choice.pick import Pick, pick_with
from sweep.choice.support import pick_warnings
from sweep.choice.surrogate import Surrogate, fit_surrogate, point_key
from sweep.choice.verdict import headline
from sweep.files.compat import BEST
from sweep.files.records import CorruptFile, read_model, write_model
from sweep.files.rundir import RunDir
from sweep.study.record import Status
from sweep.study.row import TrialRow
from sweep.study.study import SweepPlan
from train_entry.config import StrictConfig


class Cost(StrictConfig):
    tokens_used: int = Field(ge=0)
    """Tokens read by every trial of the sweep, pruned ones included."""
    tokens_saved_by_pruning: int = Field(ge=0)
    """Tokens the pruned trials would still have read had each run the whole budget."""
    full_trial_tokens: int = Field(ge=0)

    @classmethod
    def of(cls, rows: list[TrialRow], plan: SweepPlan) -> Cost:
        return cls(
            tokens_used=sum(row.tokens_seen or 0 for row in rows),
            tokens_saved_by_pruning=sum(
                plan.full_trial_tokens - (row.tokens_seen or 0) for row in rows if row.status is Status.PRUNED
            ),
            full_trial_tokens=plan.full_trial_tokens,
        )


class Evidence(StrictConfig):
    forgetting_budget: float
    trials: dict[Status, int]
    """Trials by status."""
    feasible_completed: int = Field(ge=0)
    best_observed: str
    """The best observed trial in one sentence (or why there is none): evidence for the pick, never the headline."""
    runner_up: TrialRow | None
    """The second-best feasible trial: its distance to the best observed trial is how clear the choice is."""


class BestSummary(StrictConfig):
    verdict: str
    """The decision in one sentence: the pick and what its confirmation measured, or why there is no pick to promote
    (sweep/choice/verdict.py). Every surface leads with it."""
    pick: Pick
    """The recommended point: the surrogate's under the plan's rule, else the best observed trial's, with the
    evidence for it (sweep/choice/pick.py); with confirmation, the point confirmed (or the last one tried)."""
    confirmation: Confirmation
    """The pick re-run at fresh seeds: predicted against confirmed, round by round (sweep/choice/confirmation.py)."""
    pick_trials: list[int]
    """Every trial run at the pick's point, by number: its search trials, replicates and confirmation trials."""
    boundary_warnings: list[str]
    """What the pick rests on when the trials do not pin it down (sweep/choice/support.py), then each searched bound
    the best observed trial sits on."""
    best_observed: TrialRow | None
    """The completed trial within the budget with the highest domain_gain: one run at one seed, evidence."""
    least_forgetting: TrialRow | None
    """When nothing is feasible: the Pareto trial closest to the budget."""
    evidence: Evidence
    pareto_front: list[TrialRow]
    cost: Cost


def best_summary(selection: Selection, rows: list[TrialRow], plan: SweepPlan) -> BestSummary:
    """best.json's content, fitting the surrogate to the rows."""
    return best_summary_with(fit_surrogate(rows, plan.space), selection, rows, plan)


def best_summary_with(
    surrogate: Surrogate | None, selection: Selection, rows: list[TrialRow], plan: SweepPlan
) -> BestSummary:
    """best.json's content with a surrogate already fitted to the rows (None: too few points)."""
    feasible = ranked_completed(rows, plan.forgetting_budget, plan.downstream_budget)
    pick, confirmation = _pick_and_confirmation(surrogate, selection, rows, plan)
    budget = plan.forgetting_budget
    return BestSummary(
        verdict=headline(pick, confirmation, budget=budget, max_lr=plan.max_lr),
        pick=pick,
        confirmation=confirmation,
        pick_trials=_trials_at(pick, rows),
        boundary_warnings=[
            *pick_warnings(pick, plan.space, rows),
            *(f"the best observed trial sits on the edge of the search: {note}" for note in selection.boundary),
        ],
        best_observed=selection.best_observed,
        least_forgetting=selection.least_forgetting,
        evidence=Evidence(
            forgetting_budget=budget,
            trials={status: sum(row.status is status for row in rows) for status in Status},
            feasible_completed=len(feasible),
            best_observed=selection.verdict,
            runner_up=feasible[1] if len(feasible) > 1 else None,
        ),
        pareto_front=selection.pareto,
        cost=Cost.of(rows, plan),
    )


def _pick_and_confirmation(
    surrogate: Surrogate | None, selection: Selection, rows: list[TrialRow], plan: SweepPlan
) -> tuple[Pick, Confirmation]:
    """With confirmation, its rounds replayed over the rows decide the pick (each round refits the surrogate
    to the rows before it); without, the pick of `surrogate`."""
    if plan.search.confirmation.seeds > 0:
        state = confirmation_state(rows, Setting.of(plan))
        return state.pick, state.confirmation
    pick = pick_with(
        surrogate,
        rows,
        space=plan.space,
        budget=plan.forgetting_budget,
        config=plan.pick,
        observed=selection.best_observed,
        downstream_budget=plan.downstream_budget,
    )
    return pick, OFF


def _trials_at(pick: Pick, rows: list[TrialRow]) -> list[int]:
    if pick.point is None:
        return []
    key = point_key(pick.point.lr_fraction, pick.point.domain_share)
    return sorted(row.number for row in rows if point_key(row.lr_fraction, row.domain_share) == key)


def trials_expected(summary: BestSummary, rows: list[TrialRow], plan: SweepPlan) -> int:
    """How many trials the sweep ends with, as things stand: the searched trials and replicates, the confirmation
    trials run, and the rest of a round still due. Without confirmation, planned_trials."""
    searched = plan.search.num_trials + plan.search.replicates.trials
    confirmation = summary.confirmation
    if confirmation.outcome is Outcome.OFF:
        return plan.planned_trials
    run = sum(row.confirms is not None for row in rows)
    if confirmation.outcome is Outcome.PENDING:
        return searched + max(run, (len(confirmation.rounds) + 1) * plan.search.confirmation.seeds)
    return searched + run  # confirmed, or nothing (more) to confirm


def write_best(summary: BestSummary, run: RunDir) -> None:
    write_model(run.inside(run.best_json), summary, BEST)


class NoBestSummary(ValueError):
    """A run without a readable best.json (unfinished, or not written by cpt-sweep)."""


def read_best(run: RunDir) -> BestSummary:
    if not run.best_json.is_file():
        raise NoBestSummary(
            f"{run.path} is not a finished sweep: no {run.best_json.name} (run `sweep run SPEC` to the end first)"
        )
    try:
        return read_model(run.best_json, BestSummary, fmt=BEST)
    except CorruptFile as exc:
        raise NoBestSummary(str(exc)) from None
