"""best.json checked against the study it summarises, before its point is promoted.

best.json is a file in a run directory that people open, copy and edit; the study is the record the sweep wrote
as the trials ran. A point promoted as best.json says (an lr_fraction outside the searched space, a confirmation
outcome edited to "confirmed") would plan a 340 k GPU-hour run on a claim no trial made, so promotion acts only on
what the study's trials and the searched space back: the point inside the space, its trial at that point with
those metrics, every trial row best.json holds the study's row of that trial field for field, the pick's trials and
measured figures the study's at its point, its predictions what the surrogate's own formulas give from their
mean and spreads (an interval edited to 0.5 became the plan's watch bound) with P in [0, 1] and the plan's rule
met, its source one a sweep's pick can have, and a confirmed pick's confirmation trials there, completed, within the
budget.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from sweep.choice.best import BestSummary
from sweep.choice.confirmation import ConfirmedPoint, Outcome
from sweep.choice.feasible import is_feasible
from sweep.files.records import first_difference
from sweep.files.rundir import RunDir, RunDirError
from sweep.promote.errors import PromotionError
from sweep.promote.point.pick_check import REWRITE, check_pick
from sweep.space import SearchSpace
from sweep.study.record import Status
from sweep.study.row import TrialRow
from sweep.study.run_study import StudyOpener
from sweep.study.study import SweepPlan
from sweep.study.table import trial_rows
from train_entry.config import shown
from train_entry.mix import MixRatio


def check_against_study(
    run: RunDir, study: StudyOpener, best: BestSummary, *, where: str, trial: int | None, confirmed: bool
) -> None:
    """PromotionError unless best.json's point at `where` (best_observed or pick.point) lies in the searched
    space, `trial` (its trial, None between tried points) ran there with the metrics best.json gives, and (when
    `confirmed`) the confirmation it claims is what the study's confirmation trials measured."""
    try:
        _, sweep = study()
    except RunDirError as exc:
        raise PromotionError(f"{run.best_json} cannot be checked against the study it summarises: {exc}") from None
    rows = {row.number: row for row in trial_rows(sweep)}
    lr_fraction, mix = _point(best, where)
    _check_in_space(run, sweep.plan.space, where, lr_fraction, mix)
    if trial is not None:
        _check_trial(run, rows.get(trial), where, trial, lr_fraction, mix, best)
    _check_rows(run, best, rows)
    if where == "pick.point":
        check_pick(run.best_json, best.pick, sweep.plan, rows)
    if confirmed:
        _check_confirmation(run, best, sweep.plan, rows)


def _point(best: BestSummary, where: str) -> tuple[float, str]:
    point = best.best_observed if where == "best_observed" else best.pick.point
    return point.lr_fraction, point.mix


def _check_in_space(run: RunDir, space: SearchSpace, where: str, lr_fraction: float, mix: str) -> None:
    try:
        ratio = MixRatio.parse(mix)
    except ValueError:
        ratio = None
    if ratio is None or not _within_mixes(space, ratio):
        raise PromotionError(
            f"{run.best_json}: {where}.mix is {mix!r}, not a mix of the searched space ({_mixes(space)}); {REWRITE}"
        )
    lr = space.lr_fraction
    inside = (
        any(math.isclose(lr_fraction, value, rel_tol=1e-9) for value in lr)
        if isinstance(lr, list)
        else lr.low * (1 - 1e-9) <= lr_fraction <= lr.high * (1 + 1e-9)
    )
    if not inside:
        searched = ", ".join(f"{value:g}" for value in lr) if isinstance(lr, list) else f"{lr.low:g}-{lr.high:g}"
        raise PromotionError(
            f"{run.best_json}: {where}.lr_fraction is {lr_fraction:g}, outside the searched lr_fraction "
            f"({searched}); {REWRITE}"
        )


def _within_mixes(space: SearchSpace, ratio: MixRatio) -> bool:
    if isinstance(space.mix, list):
        return any(math.isclose(ratio.domain_share, listed.domain_share, rel_tol=1e-9) for listed in space.mix)
    low, high = sorted((space.mix.low.log_ratio, space.mix.high.log_ratio))
    return low - 1e-9 <= ratio.log_ratio <= high + 1e-9


def _mixes(space: SearchSpace) -> str:
    if isinstance(space.mix, list):
        return "listed: " + ", ".join(str(mix) for mix in space.mix)
    return f"from {space.mix.low} to {space.mix.high}"


def _check_trial(
    run: RunDir, row: TrialRow | None, where: str, number: int, lr_fraction: float, mix: str, best: BestSummary
) -> None:
    said = f"{run.best_json}: {where} names trial {number}"
    if row is None or row.status is not Status.COMPLETED:
        found = "no such trial" if row is None else f"it is {row.status.value}"
        raise PromotionError(f"{said}, but the study has {found}, not a completed trial; {REWRITE}")
    if not _same_point(row, lr_fraction, mix):
        raise PromotionError(
            f"{said} at {lr_fraction:g} @ {mix}, but the study ran it at {row.lr_fraction:g} @ {row.mix}; {REWRITE}"
        )
    observed = best.best_observed
    if where == "best_observed" and not (
        _same(observed.domain_gain, row.domain_gain) and _same(observed.forgetting, row.forgetting)
    ):
        raise PromotionError(
            f"{said} with domain_gain {observed.domain_gain} and forgetting {observed.forgetting}, but the study "
            f"measured {row.domain_gain} and {row.forgetting}; {REWRITE}"
        )


def _check_rows(run: RunDir, best: BestSummary, rows: dict[int, TrialRow]) -> None:
    """Every trial row best.json holds is the study's row of that trial, field for field."""
    held = {
        "best_observed": best.best_observed,
        "least_forgetting": best.least_forgetting,
        "evidence.runner_up": best.evidence.runner_up,
        **{f"pareto_front.{index}": row for index, row in enumerate(best.pareto_front)},
    }
    for where, row in held.items():
        if row is None:
            continue
        if row.number not in rows:
            raise PromotionError(
                f"{run.best_json}: {where} names trial {row.number}, which the study does not hold; {REWRITE}"
            )
        mismatch = first_difference(row, rows[row.number])
        if mismatch is not None:
            key, stored, measured = mismatch
            raise PromotionError(
                f"{run.best_json}: {where}.{key} is {shown(stored)}, but the study's trial {row.number} has "
                f"{shown(measured)}; {REWRITE}"
            )


def _check_confirmation(run: RunDir, best: BestSummary, plan: SweepPlan, rows: dict[int, TrialRow]) -> None:
    """A confirmed pick: its last round at the pick's point, its trials the study's confirmation trials of that
    round there, as many as the plan's seeds, all completed, their mean forgetting within the plan's budget."""
    confirmation, point = best.confirmation, best.pick.point
    said = f"{run.best_json}: confirmation.outcome is {Outcome.CONFIRMED.value!r}"
    if confirmation.outcome is not Outcome.CONFIRMED or not confirmation.rounds:
        raise PromotionError(f"{said} with no round of confirmation trials; {REWRITE}")
    last: ConfirmedPoint = confirmation.rounds[-1]
    if not (math.isclose(last.lr_fraction, point.lr_fraction, rel_tol=1e-9) and last.mix == point.mix):
        raise PromotionError(
            f"{said}, but its last round ran at {last.lr_fraction:g} @ {last.mix}, not at the pick "
            f"{point.lr_fraction:g} @ {point.mix}; {REWRITE}"
        )
    trials = [rows.get(number) for number in last.trials]
    wrong = _not_confirming(trials, last)
    if wrong is not None or len(trials) != plan.search.confirmation.seeds:
        why = wrong or f"{len(trials)} trials where the sweep runs {plan.search.confirmation.seeds} a round"
        raise PromotionError(f"{said}, but the study's confirmation trials say otherwise: {why}; {REWRITE}")
    mean = statistics.fmean(row.forgetting for row in trials)
    if not is_feasible(mean, plan.forgetting_budget):
        raise PromotionError(
            f"{said}, but its confirmation trials {', '.join(map(str, last.trials))} measured mean forgetting "
            f"{mean:.4f}, over the sweep's budget {plan.forgetting_budget:g}: the pick is not confirmed; promote it "
            "anyway with --unconfirmed"
        )


def _not_confirming(trials: Sequence[TrialRow | None], last: ConfirmedPoint) -> str | None:
    """Why the round's trials are not the study's completed confirmation trials of it at its point; None if they are."""
    for number, row in zip(last.trials, trials):
        if row is None or row.confirms != last.round:
            return f"trial {number} is not a confirmation trial of round {last.round}"
        if not _same_point(row, last.lr_fraction, last.mix):
            return f"trial {number} ran at {row.lr_fraction:g} @ {row.mix}"
        if row.status is not Status.COMPLETED or row.forgetting is None or not math.isfinite(row.forgetting):
            return f"trial {number} ended {row.status.value} with no final forgetting"
    return None


def _same_point(row: TrialRow, lr_fraction: float, mix: str) -> bool:
    try:
        share = MixRatio.parse(mix).domain_share
    except ValueError:
        return False
    return math.isclose(row.lr_fraction, lr_fraction, rel_tol=1e-9) and math.isclose(
        row.domain_share, share, rel_tol=1e-9
    )


def _same(recorded: float | None, measured: float | None) -> bool:
    if recorded is None or measured is None:
        return recorded is measured
    return math.isclose(recorded, measured, rel_tol=1e-9, abs_tol=1e-12)
