"""What a trial's Optuna trial holds, the sweep's one source of truth: its keys, statuses and readers.

Optuna keeps the state (RUNNING, COMPLETE, PRUNED, FAIL), the objective (domain_gain) and its
intermediate values; the rest of what the trials table shows lives in the trial's user attrs
under the `Attr` keys. The writers (sweep.study.pruning for each evaluation, sweep.study.trial for
the outcome) and the readers (the table, the forecast) share these keys so they cannot drift apart;
this module imports none of them.
"""

from __future__ import annotations

import enum

import optuna
from optuna.trial import TrialState

from train_entry.trial_config import Metrics


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
    CONFIRMS = "confirms"
    """A confirmation trial's round (0: the first point confirmed; see sweep.choice.confirmation)."""
    TEXT_ERROR = "text_error"
    """How much the trial's final domain_gain and forgetting would move on another draw of validation text (a
    TextError dict): the validation sample's share of the noise, which the surrogate adds to its P."""
    REPLICATE_OF = "replicate_of"
    """The number of the trial whose point a replicate re-runs with another seed."""


def best_of(history: list[Metrics]) -> Metrics:
    """The evaluation with the highest domain_gain (the earliest among equals)."""
    return max(history, key=lambda metrics: (metrics.domain_gain, -metrics.step))


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
