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

from sweep.files.compat import TRIAL_BASE
from sweep.files.records import CorruptFile, read_stored
from train_entry.trial_config import BaseLosses, Metrics


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
    """The latest interim evaluation (a Metrics dict, on the pool's interim windows)."""
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
    FIGURES = "figures"
    """The trial's final figures on its validation text (train_entry.trial_config.Figures less its per-document
    losses, which stay in its result.json): the text they were measured on ("pool", "draw 1"...), the step, the
    losses, domain_gain, forgetting and their text error over the text's documents."""
    REPLICATE_OF = "replicate_of"
    """The number of the trial whose point a replicate re-runs with another seed."""
    DOWNSTREAM = "downstream"
    """A completed trial's downstream scores (evaluation.downstream): per task its metric, score, standard error,
    and the base's score and the drop from it with the drop's paired error (train_entry.downstream.scores.TaskDrop)."""
    DOWNSTREAM_SECONDS = "downstream_seconds"
    """Wall seconds its downstream evaluation took."""
    BASE_LOSSES = "base_losses"
    """The base's domain and general losses on the trial's validation draw (with their format version), written
    when the trial starts: what its domain_gain and forgetting are relative to, kept so that no reader (the ladder's
    law, the report's curves) solves the two formulas back for them."""


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


def base_attr(base: BaseLosses) -> dict:
    """The base's two losses as a trial stores them (the per-sequence losses stay in its trial_config.json)."""
    return TRIAL_BASE.stamped(base.model_dump(mode="json", include={"domain_loss", "general_loss"}))


def base_losses_of(frozen: optuna.trial.FrozenTrial, *, study: str) -> BaseLosses:
    """The base's losses a trial was measured against, as it stored them; CorruptFile naming `study` (where the
    study is kept), the trial and the key when they are missing or not what cpt-sweep writes there."""
    place = f"{study}: trial {frozen.number}'s user attr {Attr.BASE_LOSSES.value!r}"
    if Attr.BASE_LOSSES.value not in frozen.user_attrs:
        raise CorruptFile(
            f"{place} is missing: the trial was recorded by an earlier cpt-sweep, before trials kept their base's "
            f"losses; {TRIAL_BASE.remedy}"
        )
    return read_stored(place, frozen.user_attrs[Attr.BASE_LOSSES.value], BaseLosses, fmt=TRIAL_BASE)
