"""A ladder promoted: the loss law's constrained optimum at the promotion target's N, pretraining tokens and full-run
tokens, with its bootstrap intervals and the leave-one-rung-out fold errors, or the law's refusal (sweep.promote.point.point
turns the point into the plan's PromotedPoint).
"""

from __future__ import annotations

import math

from pydantic import Field

from sweep.files.records import CorruptFile
from sweep.files.rundir import RunDir
from sweep.ladder.record import LadderSummary, read_ladder
from sweep.ladder.rungs import mismatches
from sweep.law.bootstrap import Refits, bootstrap_refits
from sweep.law.predict import TrajectoryPoint, predict, trajectory
from sweep.law.prediction import TargetPrediction
from sweep.law.select import Laws
from sweep.law.table import LawInputError, ObservationTable
from sweep.law.validate import FoldErrors
from sweep.promote.errors import PromotionError
from sweep.target.full_run import full_run_schedule
from sweep.target.scale import LadderTarget, TargetScale
from sweep.target.schedule import lr_mean
from train_entry.config import StrictConfig
from train_entry.mix import MixRatio
from train_entry.optimizer import OptimizerConfig


class LawPoint(StrictConfig):
    """What a plan records of the ladder's law: the law, where it was evaluated, its prediction there with its
    intervals, how well it predicted each rung from the others, and what a reader must see before trusting it."""

    target: TargetScale
    laws: Laws
    """Every form fitted, with its weight: the answer is their weighted average."""
    prediction: TargetPrediction
    """Its optimum is the promoted point; every figure of it is evaluated there."""
    folds: list[FoldErrors] = Field(default_factory=list)
    """Leave-one-rung-out: each rung's optimum and losses predicted from the others, against its own."""
    warnings: list[str]
    trajectory: list[TrajectoryPoint] = Field(default_factory=list, max_length=1000)
    """Forgetting at the point along the run, with its interval: the law at TRAJECTORY_POINTS token counts (the LR
    area the run's schedule has reached at each), the last the full run's; empty when no refit fitted."""


TRAJECTORY_POINTS = 40
"""Token counts the law's forgetting is predicted at along the run, evenly spaced in steps: about one per evaluation
of a plan that evaluates with each of its ~40 checkpoints, so the watch interpolates little between them."""


def finished_ladder(run: RunDir) -> tuple[LadderSummary, RunDir]:
    """The ladder's summary and its largest rung's run directory; PromotionError unless every rung finished."""
    try:
        summary = read_ladder(run)
    except CorruptFile as exc:
        raise PromotionError(str(exc)) from None
    if not summary.is_finished:
        done = [rung.name for rung in summary.finished]
        raise PromotionError(
            f"{run.path} is an unfinished ladder: rungs {done or 'none'} of {summary.planned} have finished "
            "(run `sweep run SPEC` to the end first)"
        )
    return summary, run.rung(summary.planned[-1])


def law_point(summary: LadderSummary, at: LadderTarget, run: RunDir, recipe: OptimizerConfig) -> LawPoint:
    """The law's prediction at `at` (the one ladder.json holds when it was made for the same target, tokens and
    pick rule, else refitted from its evaluations) and its forgetting along the run under `recipe`'s schedule;
    PromotionError with the law's refusal when it has no credible point, or when its point keeps the budget in fewer
    refits than objective.pick.min_probability asks."""
    fit = summary.fit
    observed = f"promote the largest rung's own pick with --observed ({run.rung(summary.planned[-1]).path})"
    if fit is None:
        raise PromotionError(f"{run.ladder_json}: {summary.note or 'no law was fitted'}; {observed}")
    prediction = fit.prediction
    try:
        table = summary.table()
    except LawInputError as exc:
        raise PromotionError(f"{run.ladder_json}: {exc}") from None
    refits = None  # the bootstrap refits, made once for the prediction (when refitted) and the trajectory
    if prediction.target != at.scale or prediction.pick != summary.pick:
        refits = bootstrap_refits(table, fit.laws, summary.settings)
        prediction = predict(
            table, fit.laws, at.scale, summary.box, summary.forgetting_budget, summary.settings, summary.pick,
            refits=refits,
        )  # fmt: skip
    if prediction.refusal is not None or prediction.optimum is None:
        why = prediction.refusal.message if prediction.refusal else "no optimum"
        raise PromotionError(f"{run.ladder_json}: {why}; nothing is promoted from this ladder, or {observed}")
    threshold = summary.pick.min_probability
    if prediction.within_budget is None or prediction.within_budget < threshold:
        shown = "unknown" if prediction.within_budget is None else f"{prediction.within_budget:.2f}"
        raise PromotionError(
            f"{run.ladder_json}: P(forgetting <= budget) at the law's point (lr_fraction "
            f"{prediction.optimum.lr_fraction:.4g}, mix {prediction.optimum.mix}) is {shown}, below "
            f"objective.pick.min_probability {threshold:g}; nothing is promoted from this ladder, or {observed}"
        )
    folds = [fold.errors for fold in fit.validation.folds] if fit.validation else []
    return LawPoint(
        target=at.scale,
        laws=fit.laws,
        prediction=prediction,
        folds=folds,
        warnings=_warnings(summary, at, folds),
        trajectory=_along_the_run(
            summary, at, recipe, prediction, table, refits or bootstrap_refits(table, fit.laws, summary.settings)
        ),
    )


def _along_the_run(
    summary: LadderSummary,
    at: LadderTarget,
    recipe: OptimizerConfig,
    prediction: TargetPrediction,
    table: ObservationTable,
    refits: Refits,
) -> list[TrajectoryPoint]:
    """The law's forgetting at the promoted point after each TRAJECTORY_POINTS-th of the run's steps: the run's
    tokens so far and the mean of its schedule's LR so far, ending at the full run (`at` itself)."""
    optimum = prediction.optimum
    point = (optimum.lr_fraction, MixRatio.parse(optimum.mix).domain_share)  # the promoted point, as the plan has it
    schedule = full_run_schedule(at.warmup_steps, recipe)
    steps = sorted({max(1, round(at.steps * i / TRAJECTORY_POINTS)) for i in range(1, TRAJECTORY_POINTS)})
    targets = [
        at.scale.model_copy(
            update={
                "tokens": at.scale.tokens * step / at.steps,
                "lr_mean": lr_mean(schedule, steps=step, total_steps=at.steps),
            }
        )
        for step in steps
        if step < at.steps
    ]
    return trajectory(table, summary.fit.laws, refits, [*targets, at.scale], *point, summary.box, summary.settings)


def _warnings(summary: LadderSummary, at: LadderTarget, folds: list[FoldErrors]) -> list[str]:
    largest = summary.rungs[-1]
    reach = math.log10(at.scale.parameters / largest.parameters)
    beyond = (
        f"predicted {reach:.1f} orders of magnitude beyond the largest rung ({largest.parameters:,} to "
        f"{at.scale.parameters:,.0f} non-embedding parameters of {at.scale.name}) by a law fitted to "
        f"{len(summary.rungs)} rungs"
    )
    warnings = [beyond]
    warnings += [f"matched only in part: {line}" for line in mismatches(summary.rungs, at.ratios)]
    uncovered = [fold.rung for fold in folds if not fold.covered]
    if uncovered:
        warnings.append(
            f"leave-one-rung-out: the intervals missed rung(s) {', '.join(uncovered)} when predicted from the others"
        )
    return warnings
