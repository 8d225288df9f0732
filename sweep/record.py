"""How a trial's outcome is written into its Optuna trial, the sweep's one source of truth.

Optuna keeps the state (RUNNING, COMPLETE, PRUNED, FAIL), the objective (domain_gain) and its
intermediate values; the rest of what the trials table shows lives in the trial's user attrs
under the `Attr` keys. Writers (the trial, the searcher) and the reader (the table) share this
module so they cannot drift apart.
"""

from __future__ import annotations

import enum
import math
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState

from train_entry.trial_config import Metrics, TrialResult, TrialStatus

if TYPE_CHECKING:  # sweep.study builds its sampler and pruner from this module's keys, sweep.forecast reads curves
    from sweep.forecast import ForgettingForecast
    from sweep.study import SweepStudy


class Status(str, enum.Enum):
    """A trial's status in the trials table."""

    WAITING = "WAITING"
    """Enqueued (a grid point) but not started."""
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    """Ran the full budget: the only status the optimum is chosen from."""
    PRUNED = "PRUNED"
    """Stopped early by the Optuna pruner or the forgetting guard."""
    DIVERGED = "DIVERGED"
    FAILED = "FAILED"
    """Raised on every attempt."""


class Attr(str, enum.Enum):
    """User-attr keys of an Optuna trial."""

    STATUS = "status"
    REASON = "reason"
    POINT = "point"
    """The params of an enqueued (grid) trial: Optuna shows a WAITING trial with no params."""
    LAST = "last"
    """The latest evaluation (a Metrics dict); its forgetting is what the sampler's constraint reads."""
    BEST = "best"
    """The evaluation with the highest domain_gain, written when the trial ends."""
    HISTORY = "history"
    """Every evaluation so far (a list of Metrics dicts, by step): the report's learning curves."""
    STEPS = "steps"
    TOKENS_SEEN = "tokens_seen"
    WALL_SECONDS = "wall_seconds"
    ATTEMPTS = "attempts"
    ERROR = "error"
    """The last exception a trial raised, kept across Ray's retries for the FAILED reason."""
    FORECAST = "forecast"
    """The latest evaluation's forecast of the forgetting the trial ends at (a ForgettingForecast dict):
    what pruning judged it by."""
    SEED = "seed"
    """A replicate's training seed; a trial without it trains on proxy.seed."""
    REPLICATE_OF = "replicate_of"
    """The number of the trial whose point a replicate re-runs with another seed."""


FORGETTING_CONSTRAINT = "forgetting"
"""The Optuna constraint: final forgetting minus the budget."""


def record_evaluation(
    trial: optuna.Trial, metrics: Metrics, *, value: float, forecast: ForgettingForecast, new_step: bool
) -> None:
    """Stores one evaluation: `value` (what the pruner judges) as the intermediate value, the metrics and
    the forecast of its forgetting as attrs.

    `new_step` is False when an earlier attempt already reported this step: Optuna keeps the
    first value of a step, and a rerun of the same config measures the same metrics anyway (its
    forecast may draw on more completed trials; the latest is the one stored).
    """
    if new_step:
        trial.report(value, step=metrics.step)
    evaluation = metrics.model_dump(mode="json")
    # A retry re-reports from its first step: its evaluations replace the earlier attempt's.
    earlier = [e for e in trial.user_attrs.get(Attr.HISTORY.value, []) if e["step"] < metrics.step]
    trial.set_user_attr(Attr.HISTORY.value, [*earlier, evaluation])
    trial.set_user_attr(Attr.LAST.value, evaluation)
    trial.set_user_attr(Attr.FORECAST.value, forecast.model_dump(mode="json"))


def best_of(history: list[Metrics]) -> Metrics:
    """The evaluation with the highest domain_gain (the earliest among equals)."""
    return max(history, key=lambda metrics: (metrics.domain_gain, -metrics.step))


def record_result(sweep: SweepStudy, number: int, result: TrialResult, *, stop_reason: str | None) -> Status:
    """Writes a finished trial's outcome and tells Optuna its final state.

    A diverged trial is told PRUNED, its table status staying DIVERGED, so that samplers learn
    where training blows up: a FAIL is invisible to every Optuna sampler, and a point they cannot
    see may be proposed again. One that diverged before its first evaluation has no curve and an
    infinite forgetting constraint, which TPE ranks below every trial that measured anything (and it
    counts towards TPE's startup trials). GP and NSGA-II learn from completed trials only: to them
    it is as invisible as a FAIL, and only the resumed stream (sweep.sampling) keeps a rerun from
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
    # A completed trial always ends on an evaluation (the proxy evaluates at its last step).
    value = result.final.domain_gain if state is TrialState.COMPLETE else None
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


def history_of(frozen: optuna.trial.FrozenTrial) -> list[Metrics] | None:
    """A trial's evaluations by step; None when it was recorded before evaluations were kept
    (it has a latest evaluation but no history), so a reader can say so rather than show nothing."""
    stored = frozen.user_attrs.get(Attr.HISTORY.value)
    if stored is None:
        return None if Attr.LAST.value in frozen.user_attrs else []
    return [Metrics.model_validate(evaluation) for evaluation in stored]


def status_of(frozen: optuna.trial.FrozenTrial) -> Status:
    """The table status: Optuna's state for unfinished trials, our recorded outcome otherwise."""
    if frozen.state is TrialState.WAITING:
        return Status.WAITING
    if frozen.state is TrialState.RUNNING:
        return Status.RUNNING
    recorded = frozen.user_attrs.get(Attr.STATUS.value)
    if recorded is not None:
        return Status(recorded)
    # Told by something other than this tool (e.g. by hand from optuna-dashboard).
    return {TrialState.COMPLETE: Status.COMPLETED, TrialState.PRUNED: Status.PRUNED}.get(frozen.state, Status.FAILED)


def _outcome(result: TrialResult) -> tuple[Status, TrialState]:
    if result.status is TrialStatus.COMPLETED:
        return Status.COMPLETED, TrialState.COMPLETE
    if result.status is TrialStatus.STOPPED:
        return Status.PRUNED, TrialState.PRUNED
    return Status.DIVERGED, TrialState.PRUNED
