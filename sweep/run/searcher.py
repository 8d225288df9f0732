"""Ray Tune's search algorithm for a sweep: Optuna's ask on the sweep's study, and nothing else.

Why not Ray's OptunaSearch: it keeps its Optuna trials in its own memory (saved by pickling its
`__dict__`), tells every trial that reported the metric COMPLETE (a pruned trial too), and builds
its study with a NopPruner. Here each trial reports into and tells its own Optuna trial (see
sweep.study.trial), so this searcher only asks the study for the next point, hands a rerun its
interrupted trials first, and records FAILED when Ray Tune gives up on a trial after its retries.
Once the planned main trials are asked it waits for them to finish, enqueues the replicates their
outcomes call for (sweep.choice.replicates) and hands those out; once they have finished, the confirmation
trials of the pick (sweep.choice.confirmation), round after round until a point is confirmed or the rounds
run out; then it finishes.
All of its state is in the study, so a new driver after `kill -9` rebuilds it from there.
"""

from __future__ import annotations

import optuna
from optuna.trial import FrozenTrial, TrialState
from ray.tune.search import Searcher

from sweep.choice.confirmation import Setting, confirmation_state
from sweep.choice.replicates import is_replicate, replicates_due
from sweep.study.record import Attr
from sweep.study.study import SweepStudy
from sweep.study.table import trial_rows
from sweep.study.trial import NUMBER, record_failure


class StudySearcher(Searcher):
    def __init__(self, sweep: SweepStudy) -> None:
        # No metric: Ray Tune never ranks these trials (each tells its own Optuna trial), and a metric here would
        # make Tune's strict metric check fail the whole sweep on a trial that ends before its first report
        # (one that diverges at once: its last result holds only Ray's own keys).
        super().__init__(metric=None, mode=None)
        self._sweep = sweep
        # Trials a killed driver left RUNNING: run again under the same number, so the study
        # ends with exactly the planned trials and no duplicates.
        self._interrupted = [t.number for t in sweep.trials() if t.state is TrialState.RUNNING]
        self._numbers: dict[str, int] = {}
        if not self._interrupted and _searched_finished(sweep.trials()):
            enqueue_confirmations(sweep)  # a round a killed driver found due but did not enqueue: to_run counts it

    @property
    def to_run(self) -> int:
        """Trials this driver will start as things stand: the interrupted ones and those never asked for
        (replicates and the confirmation rounds begun included)."""
        trials = self._sweep.trials()
        asked = sum(t.state is not TrialState.WAITING for t in trials)
        rounds = {t.user_attrs[Attr.CONFIRMS.value] for t in trials if is_confirmation(t)}
        more = max(len(rounds) - 1, 0) * self._sweep.plan.search.confirmation.seeds
        return len(self._interrupted) + self._sweep.plan.planned_trials + more - asked

    @property
    def most_to_run(self) -> int:
        """Trials this driver starts at most: to_run, and every confirmation round not begun."""
        plan = self._sweep.plan
        return self.to_run + plan.most_trials - plan.planned_trials

    @property
    def _confirming(self) -> bool:
        """Confirmation is on: trials may be due that nothing has asked for yet, so running out is not finishing."""
        return self._sweep.plan.search.confirmation.seeds > 0

    def suggest(self, trial_id: str) -> dict | str | None:
        """The next trial's config; None while a later phase waits for the trials its choice depends on."""
        if self._interrupted:
            number = self._interrupted.pop(0)
            params = self._sweep.params(number)
        elif self.to_run <= 0 and not self._confirming:
            return Searcher.FINISHED
        else:
            trial = self._ask()
            if not isinstance(trial, optuna.Trial):
                return trial
            number, params = trial.number, trial.params
        self._numbers[trial_id] = number
        return {NUMBER: number, **params}

    def _ask(self) -> optuna.Trial | str | None:
        """A main trial until num_trials are asked; once they have all finished, a replicate; once those have
        finished, a confirmation trial of the pick; when nothing is left to run or wait for, FINISHED."""
        main = [t for t in self._sweep.trials() if not is_replicate(t) and not is_confirmation(t)]
        if sum(t.state is not TrialState.WAITING for t in main) < self._sweep.plan.search.num_trials:
            return self._sweep.ask()
        if not all(t.state.is_finished() for t in main):
            return None  # which points are re-run depends on how every main trial ends
        if enqueue_replicates(self._sweep) > 0:
            return self._sweep.ask()  # the oldest WAITING trial: a replicate
        if not self._confirming:
            return Searcher.FINISHED
        if not _searched_finished(self._sweep.trials()):
            return None  # the pick to confirm depends on every replicate too
        confirming = [t for t in self._sweep.trials() if is_confirmation(t) and not t.state.is_finished()]
        if any(t.state is TrialState.WAITING for t in confirming):
            return self._sweep.ask()  # a confirmation trial
        if confirming:
            return None  # whether another point is confirmed depends on how these end
        # Asked only when no confirmation trial is left to run: it refits the surrogate for every round.
        return self._sweep.ask() if enqueue_confirmations(self._sweep) > 0 else Searcher.FINISHED

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        number = self._numbers.pop(trial_id)
        if error:
            attrs = self._sweep.frozen(number).user_attrs
            reason = attrs.get(Attr.ERROR.value, "the trial's worker died; see tune/ in the run directory")
            record_failure(self._sweep, number, reason)


def is_confirmation(frozen: FrozenTrial) -> bool:
    return Attr.CONFIRMS.value in frozen.user_attrs


def _searched_finished(trials: list[FrozenTrial]) -> bool:
    """Every main trial and replicate has finished (and at least one ran): the pick to confirm is settled."""
    searched = [t for t in trials if not is_confirmation(t)]
    return bool(searched) and all(t.state.is_finished() for t in searched)


def enqueue_confirmations(sweep: SweepStudy) -> int:
    """Enqueues the confirmation trials due (sweep.choice.confirmation); returns how many are waiting to be asked
    for. Call it once every main trial and replicate has finished."""
    if sweep.plan.search.confirmation.seeds == 0:
        return 0
    due = confirmation_state(trial_rows(sweep), Setting.of(sweep.plan)).due
    if due is not None:
        for seed in due.seeds:
            attrs = {Attr.POINT.value: due.params, Attr.CONFIRMS.value: due.round, Attr.SEED.value: seed}
            sweep.study.enqueue_trial(due.params, user_attrs=attrs)
    return sum(t.state is TrialState.WAITING and is_confirmation(t) for t in sweep.trials())


def enqueue_replicates(sweep: SweepStudy) -> int:
    """Enqueues the replicates not in the study yet; returns how many are waiting to be asked for.

    Call it once every main trial has finished: their outcomes decide which points are re-run.
    """
    trials = sweep.trials()
    enqueued = {
        (t.user_attrs[Attr.REPLICATE_OF.value], t.user_attrs[Attr.SEED.value]) for t in trials if is_replicate(t)
    }
    for replicate in replicates_due(
        [t for t in trials if not is_replicate(t) and not is_confirmation(t)],
        sweep.plan.search.replicates,
        budget=sweep.plan.forgetting_budget,
        seed=sweep.plan.proxy.seed,
    ):
        if (replicate.of, replicate.seed) in enqueued:
            continue
        attrs = {
            Attr.POINT.value: replicate.params,
            Attr.REPLICATE_OF.value: replicate.of,
            Attr.SEED.value: replicate.seed,
        }
        sweep.study.enqueue_trial(replicate.params, user_attrs=attrs)
    return sum(t.state is TrialState.WAITING and is_replicate(t) for t in sweep.trials())
