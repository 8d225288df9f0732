"""One trial run against its Optuna trial: every report goes to the study, the outcome is told.

The Ray Tune trainable calls this with the real proxy trial; tests call it with a scripted one,
as Optuna tests its pruners. A trial already finished in the study (a retry after its tell, or a
rerun racing a crash) is not run again.
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Callable
from typing import Any

from optuna.trial import TrialState

from sweep.study.pruning import PruningReporter
from sweep.study.record import Attr, Status, base_attr, best_of, status_of
from sweep.study.study import SweepStudy
from train_entry.trial_config import BaseLosses, Metrics, TrialResult, TrialStatus

Report = Callable[[Metrics], bool]
"""What a proxy trial calls at each evaluation; True stops it."""

NUMBER = "number"
"""The Optuna trial number in a Ray Tune trial's config (the searcher's suggestion, which the trainable runs); the
params ride along for Ray's logs."""
FORGETTING_CONSTRAINT = "forgetting"
"""The Optuna constraint: final forgetting minus the budget."""


def run_study_trial(
    sweep: SweepStudy,
    number: int,
    run: Callable[[Report], TrialResult],
    *,
    base: BaseLosses,
    on_report: Callable[[Metrics], None] = lambda metrics: None,
) -> Status:
    """Runs `run(report)` as Optuna trial `number` and records its outcome; returns its status. `base`, the base's
    losses its metrics are measured against, is stored with it before it runs, as a pruned or failed trial's
    evaluations are too.

    An exception is stored on the trial (so that its FAILED reason survives the retries) and
    raised again for Ray Tune to retry the trial.
    """
    frozen = sweep.frozen(number)
    if frozen.state.is_finished():
        return status_of(frozen)
    trial = sweep.trial(number)
    trial.set_user_attr(Attr.ATTEMPTS.value, frozen.user_attrs.get(Attr.ATTEMPTS.value, 0) + 1)
    trial.set_user_attr(Attr.BASE_LOSSES.value, base_attr(base))
    plan = sweep.plan
    reporter = PruningReporter(
        trial=trial,
        frozen=lambda: sweep.frozen(number),
        pruner=sweep.study.pruner,
        budget=plan.forgetting_budget,
        penalty=plan.search.pruner.infeasible_penalty,
        reported_steps=frozenset(frozen.intermediate_values),
    )

    def report(metrics: Metrics) -> bool:
        on_report(metrics)
        return reporter(metrics)

    try:
        result = run(report)
    except Exception as exc:
        last = traceback.extract_tb(exc.__traceback__)[-1]
        trial.set_user_attr(Attr.ERROR.value, f"{type(exc).__name__}: {exc} (at {last.filename}:{last.lineno})")
        raise
    return record_result(sweep, number, result, stop_reason=reporter.stop_reason)


def record_result(sweep: SweepStudy, number: int, result: TrialResult, *, stop_reason: str | None) -> Status:
    """Writes a finished trial's outcome and tells Optuna its final state.

    A diverged trial is told PRUNED, its table status staying DIVERGED, so that samplers learn
    where training blows up: a FAIL is invisible to every Optuna sampler, and a point they cannot
    see may be proposed again. One that diverged before its first evaluation has no curve and an
    infinite forgetting constraint, which TPE ranks below every trial that measured anything (and it
    counts towards TPE's startup trials). GP and NSGA-II learn from completed trials only: to them
    it is as invisible as a FAIL, and only the resumed stream (sweep.study.sampling) keeps a rerun from
    drawing it again. Why not a penalised value instead: a
    made-up domain_gain told COMPLETE would enter the pruners' medians, the forgetting forecasts and
    the surrogate as if measured.
    """
    status, state = _outcome(result)
    trial = sweep.trial(number)
    excess = math.inf  # diverged before measuring anything
    if result.history:
        trial.set_user_attr(Attr.HISTORY.value, [metrics.model_dump(mode="json") for metrics in result.history])
        trial.set_user_attr(Attr.LAST.value, result.history[-1].model_dump(mode="json"))
        trial.set_user_attr(Attr.BEST.value, best_of(result.history).model_dump(mode="json"))
        excess = result.history[-1].forgetting - sweep.plan.forgetting_budget
    if result.figures is not None:
        trial.set_user_attr(Attr.FIGURES.value, result.figures.model_dump(mode="json", exclude={"documents"}))
        excess = result.figures.forgetting - sweep.plan.forgetting_budget
    if result.downstream is not None:
        trial.set_user_attr(
            Attr.DOWNSTREAM.value,
            {name: task.model_dump(mode="json", exclude={"examples"}) for name, task in result.downstream.items()},
        )
    if result.usage is not None and result.usage.downstream_seconds:
        trial.set_user_attr(Attr.DOWNSTREAM_SECONDS.value, result.usage.downstream_seconds)
    # <= 0 is feasible; samplers read it to learn where the budget holds.
    trial.set_constraint(FORGETTING_CONSTRAINT, excess if math.isfinite(excess) else math.inf)
    attrs: dict[str, Any] = {
        Attr.STATUS: status.value,
        Attr.REASON: stop_reason if result.status is TrialStatus.STOPPED else result.reason,
        Attr.STEPS: result.steps,
        Attr.TOKENS_SEEN: result.tokens_seen,
        Attr.WALL_SECONDS: result.wall_seconds,
    }
    for key, value in attrs.items():
        trial.set_user_attr(key.value, value)
    # A completed trial always ends with its figures on its text (the proxy measures them after its last step).
    value = result.figures.domain_gain if state is TrialState.COMPLETE else None
    sweep.study.tell(number, value, state=state)
    return status


def record_failure(sweep: SweepStudy, number: int, reason: str) -> None:
    """Marks a trial FAILED (it raised on every attempt); a trial already finished is left alone."""
    if sweep.frozen(number).state.is_finished():
        return
    trial = sweep.trial(number)
    trial.set_user_attr(Attr.STATUS.value, Status.FAILED.value)
    trial.set_user_attr(Attr.REASON.value, reason)
    sweep.study.tell(number, state=TrialState.FAIL, skip_if_finished=True)


def _outcome(result: TrialResult) -> tuple[Status, TrialState]:
    if result.status is TrialStatus.COMPLETED:
        return Status.COMPLETED, TrialState.COMPLETE
    if result.status is TrialStatus.STOPPED:
        return Status.PRUNED, TrialState.PRUNED
    return Status.DIVERGED, TrialState.PRUNED
