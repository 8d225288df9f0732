"""The promoted point: which point of a finished sweep (or ladder) the full run is planned at, and why.

best.json's pick by default (the surrogate's point, or the best observed trial's when the surrogate could
not pick), the best observed trial's point when asked (--observed), and for a ladder its loss law's optimum at
the target's size and tokens (or the law's refusal; the largest rung's pick when asked). With the point comes the resolved config a proxy trial at it runs,
from which the plan (sweep/promote/plan/plan.py) takes the schedule and the non-English share. Whatever best.json says is
checked against the study before it is acted on (sweep/promote/point/provenance.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sweep.choice.best import BestSummary, NoBestSummary, read_best
from sweep.choice.confirmation import Confirmation, Outcome
from sweep.choice.pick import Pick, PickSource
from sweep.files.compat import TRIAL_CONFIG
from sweep.files.records import CorruptFile, read_model
from sweep.files.rundir import RunDir
from sweep.law.prediction import TargetPrediction
from sweep.promote.errors import PromotionError
from sweep.promote.point.ladder import LawPoint, finished_ladder, law_point
from sweep.promote.point.provenance import check_against_study
from sweep.promote.point.trial_check import check_trial_config
from sweep.promote.request.config import PromotionConfig
from sweep.study.run_study import StudyOpener, opened_once
from sweep.target.full_run import full_run_target
from sweep.target.target import Target
from train_entry.config import StrictConfig
from train_entry.mix import Mix, MixRatio
from train_entry.trial_config import TrialConfig


class PromotedPoint(StrictConfig):
    """The point the plan promotes: best.json's pick, or its best observed trial (--observed)."""

    source: PickSource
    """surrogate: the surrogate's pick under the sweep's rule; observed: the best observed trial's point;
    ladder: a ladder's loss law's optimum at the target's size and tokens."""
    trial: int | None
    """The completed trial run at this point (the first, with replicates); None between tried points."""
    lr_fraction: float
    mix: Mix
    domain_gain: float
    """The trial's measured value at the best observed trial; the surrogate's predicted mean at its pick."""
    forgetting: float
    gain_interval: tuple[float, float] | None = None
    """90 % interval of the smooth domain_gain at the point, from the surrogate; None without one."""
    forgetting_interval: tuple[float, float] | None = None
    probability_within_budget: float | None = None
    """P(a proxy re-run at the point ends within the forgetting budget), from the surrogate; of a ladder's law, the
    share of its bootstrap refits that keep the budget there."""
    reason: str
    """Why this point and not another: the pick's outcome, or the request for the best observed trial."""
    ladder: LawPoint | None = None
    """For source ladder: the law, its prediction at the target with intervals, its fold errors and warnings."""

    @property
    def warnings(self) -> list[str]:
        return self.ladder.warnings if self.ladder is not None else []


def read_promoted(
    run_dir: Path,
    *,
    observed: bool = False,
    unconfirmed: bool = False,
    target: Target | None = None,
    config: PromotionConfig | None = None,
) -> tuple[PromotedPoint, TrialConfig]:
    """The point to promote from best.json (its pick; the best observed trial's when `observed`) and the resolved
    config a proxy trial at that point runs: a completed trial's, whose blend and schedule every trial shares, at
    the point's lr_fraction and mix. Of a ladder: its law's optimum at the target's size and the request's tokens
    (the largest rung's pick when `observed`). PromotionError when there is no point, when the pick is not
    confirmed at fresh seeds (unless `unconfirmed`), or when a file is not what the sweep wrote."""
    run = RunDir(run_dir)
    if run.is_ladder:
        return _ladder_point(run, target, config or PromotionConfig(), observed=observed)
    try:
        best = read_best(run)
    except NoBestSummary as exc:
        raise PromotionError(str(exc)) from None
    study = opened_once(run)  # each check below reads it: opened once
    if observed:
        point = _observed(best, run, study, reason="the best observed trial, as asked (--observed)")
    else:
        point = _picked(best, run, study, unconfirmed=unconfirmed)
    return point, _trial_config(run, study, best, point)


def _checked(
    best: BestSummary, run: RunDir, study: StudyOpener, where: str, trial: int | None, *, confirmed: bool
) -> None:
    """best.json's point at `where` checked against the study before anything is built from it: a hand-edited
    mix such as "abc" is this sentence, not a pydantic stack from PromotedPoint."""
    check_against_study(run, study, best, where=where, trial=trial, confirmed=confirmed)


def _ladder_point(
    run: RunDir, target: Target | None, config: PromotionConfig, *, observed: bool
) -> tuple[PromotedPoint, TrialConfig]:
    """The ladder's law at the target's N and the request's tokens, or (observed) its largest rung's pick, with that
    rung's resolved trial config at the point."""
    summary, largest = finished_ladder(run)
    # The ladder's point is extrapolated, never run: a rung's confirmation does not carry over to it.
    picked, trial = read_promoted(largest.path, unconfirmed=True)
    if observed:
        reason = f"the largest rung {largest.path.name}'s pick, as asked (--observed): {picked.reason}"
        return picked.model_copy(update={"reason": reason}), trial
    if target is None:
        raise PromotionError("a ladder's law is predicted at the target's size: name a --target (or --observed)")
    point = law_point(summary, full_run_target(target, config.full_run, trial.proxy), run, trial.proxy)
    prediction = point.prediction
    found, intervals = prediction.optimum, prediction.intervals
    promoted = PromotedPoint(
        source=PickSource.LADDER,
        trial=None,
        lr_fraction=found.lr_fraction,
        mix=MixRatio.parse(found.mix),
        domain_gain=found.domain_gain,
        forgetting=found.forgetting,
        gain_interval=None if intervals is None else (intervals.domain_gain.low, intervals.domain_gain.high),
        forgetting_interval=None if intervals is None else (intervals.forgetting.low, intervals.forgetting.high),
        probability_within_budget=prediction.within_budget,
        reason=(
            f"the loss law over rungs {', '.join(point.laws.rungs)} ({point.laws.rows} evaluations of "
            f"{point.laws.trials} trials; forms {_weights(point)}): its highest lower-confidence domain_gain with "
            f"P(forgetting <= {prediction.forgetting_budget:g}) >= {prediction.pick.min_probability:g} at {target.name}'s "
            f"{point.target.parameters:,.0f} non-embedding parameters and {point.target.tokens:,.0f} tokens "
            f"(P {prediction.within_budget:.2f}); 90 % intervals over {prediction.refits} bootstrap refits"
            f"{_carried(prediction)}"
        ),
        ladder=point,
    )
    return promoted, trial.model_copy(update={"lr_fraction": promoted.lr_fraction, "mix": promoted.mix})


def _weights(point: LawPoint) -> str:
    return ", ".join(f"{fit.form} {fit.weight:.2f}" for fit in point.laws.forms)


def proxy_trial(run_dir: Path, point: PromotedPoint) -> TrialConfig:
    """The resolved config of a proxy trial at the plan's promoted point (of a ladder, at its largest rung): what a
    rehearsal trains, whichever way the point was chosen, without predicting the law again."""
    run = RunDir(run_dir)
    if run.is_ladder:
        run = finished_ladder(run)[1]
    # The plan was made from this point, confirmed then or let through by --unconfirmed.
    _, trial = read_promoted(run.path, observed=point.source is PickSource.OBSERVED, unconfirmed=True)
    return trial.model_copy(update={"lr_fraction": point.lr_fraction, "mix": point.mix})


def _observed(
    best: BestSummary, run: RunDir, study: StudyOpener, *, reason: str, pick: Pick | None = None
) -> PromotedPoint:
    """The best feasible completed trial, with the surrogate's intervals at it when the pick is that trial."""
    row = best.best_observed
    if row is None:
        raise PromotionError(f"{run.best_json} has no point to promote: {best.evidence.best_observed}")
    if row.domain_gain is None or row.forgetting is None:
        raise PromotionError(f"{run.best_json}: its best observed trial ({row.number}) has no final metrics")
    _checked(best, run, study, "best_observed", row.number, confirmed=False)
    return PromotedPoint(
        source=PickSource.OBSERVED,
        trial=row.number,
        lr_fraction=row.lr_fraction,
        mix=row.mix,
        domain_gain=row.domain_gain,
        forgetting=row.forgetting,
        **(_intervals(pick) if pick is not None else {}),
        reason=reason,
    )


def _picked(best: BestSummary, run: RunDir, study: StudyOpener, *, unconfirmed: bool) -> PromotedPoint:
    pick = best.pick
    if pick.source is None or pick.point is None:
        raise PromotionError(f"{run.best_json} has no point to promote: no pick ({pick.reason})")
    confirmation = best.confirmation
    if confirmation.outcome is not Outcome.CONFIRMED and not unconfirmed:
        raise PromotionError(
            f"{run.best_json}: the pick ({pick.point.lr_fraction:.3g} @ {pick.point.mix}) is not confirmed at fresh "
            f"seeds ({confirmation.outcome.value}: {confirmation.reason}); promote it anyway with --unconfirmed"
        )
    reason = _with_confirmation(pick.reason, confirmation)
    point = pick.point
    # The confirmation is checked where the promotion rests on it: --unconfirmed (and a ladder's rung) does not.
    confirmed = confirmation.outcome is Outcome.CONFIRMED and not unconfirmed
    _checked(best, run, study, "pick.point", point.trials[0] if point.trials else None, confirmed=confirmed)
    if pick.source is PickSource.OBSERVED:
        return _observed(best, run, study, reason=reason, pick=pick)
    return PromotedPoint(
        source=pick.source,
        trial=point.trials[0] if point.trials else None,
        lr_fraction=point.lr_fraction,
        mix=point.mix,
        domain_gain=pick.gain.mean,
        forgetting=pick.forgetting.mean,
        **_intervals(pick),
        reason=reason,
    )


def _with_confirmation(reason: str, confirmation: Confirmation) -> str:
    return f"{reason}; confirmation: {confirmation.reason}" if confirmation.outcome is not Outcome.OFF else reason


def _carried(prediction: TargetPrediction) -> str:
    """The form's error the law's P and intervals carry, as the law fit report says it."""
    carried = prediction.discrepancy
    if carried is None:
        return ""
    return (
        f", each with its draw of the form's error (sd {carried.forgetting:.2g} of forgetting and "
        f"{carried.domain_gain:.2g} of domain_gain at {prediction.target.name}, {carried.distance:.1f} decades beyond "
        "the rungs)"
    )


def _intervals(pick: Pick) -> dict[str, Any]:
    if pick.gain is None or pick.forgetting is None:
        return {}
    return {
        "gain_interval": (pick.gain.low, pick.gain.high),
        "forgetting_interval": (pick.forgetting.low, pick.forgetting.high),
        "probability_within_budget": pick.probability_within_budget,
    }


def _trial_config(run: RunDir, study: StudyOpener, best: BestSummary, point: PromotedPoint) -> TrialConfig:
    """A completed trial's resolved config (the point's own trial's when it has one) moved to the point."""
    numbers = [point.trial] if point.trial is not None else []
    numbers += [row.number for row in (best.best_observed, *best.pareto_front) if row is not None]
    number = next((n for n in numbers if run.trial_config(n).is_file()), None)
    if number is None:
        shown = run.trial_config(numbers[0]) if numbers else run.path / "trials"
        raise PromotionError(
            f"the promoted point's resolved trial config {shown} is missing; the run directory is incomplete"
        )
    path = run.trial_config(number)
    try:
        trial = read_model(path, TrialConfig, fmt=TRIAL_CONFIG)
    except CorruptFile as exc:
        raise PromotionError(str(exc)) from None
    check_trial_config(run, study, number, trial)
    return trial.model_copy(update={"lr_fraction": point.lr_fraction, "mix": point.mix})
