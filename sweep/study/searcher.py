"""Ray Tune's search algorithm for a sweep: Optuna's ask on the sweep's study, and nothing else.

Why not Ray's OptunaSearch: it keeps its Optuna trials in its own memory (saved by pickling its
`__dict__`), tells every trial that reported the metric COMPLETE (a pruned trial too), and builds
its study with a NopPruner. Here each trial reports into and tells its own Optuna trial (see
sweep.study.trial), so this searcher only asks the study for the next point, hands a rerun its
interrupted trials first, and records FAILED when Ray Tune gives up on a trial after its retries.
Once the planned main trials are asked it waits for them to finish, enqueues the replicates their
outcomes call for (sweep.study.replicates), hands those out, and finishes.
All of its state is in the study, so a new driver after `kill -9` rebuilds it from there.
"""

from __future__ import annotations

import optuna
from optuna.trial import TrialState
from ray.tune.search import Searcher

from sweep.study.record import Attr
from sweep.study.replicates import is_replicate, replicates_due
from sweep.study.study import SweepStudy
from sweep.study.trial import record_failure

NUMBER = "number"
"""The Optuna trial number in a Ray Tune trial's config; the params ride along for Ray's logs."""


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

    @property
    def to_run(self) -> int:
        """Trials this driver will start: the interrupted ones and those never asked for (replicates included)."""
        asked = sum(t.state is not TrialState.WAITING for t in self._sweep.trials())
        return len(self._interrupted) + self._sweep.plan.planned_trials - asked

    def suggest(self, trial_id: str) -> dict | str | None:
        """The next trial's config; None while the replicates wait for the main trials to finish."""
        if self._interrupted:
            number = self._interrupted.pop(0)
            params = self._sweep.params(number)
        elif self.to_run <= 0:
            return Searcher.FINISHED
        else:
            trial = self._ask()
            if not isinstance(trial, optuna.Trial):
                return trial
            number, params = trial.number, trial.params
        self._numbers[trial_id] = number
        return {NUMBER: number, **params}

    def _ask(self) -> optuna.Trial | str | None:
        """A main trial until num_trials are asked; then, once they have all finished, a replicate."""
        main = [t for t in self._sweep.trials() if not is_replicate(t)]
        if sum(t.state is not TrialState.WAITING for t in main) < self._sweep.plan.search.num_trials:
            return self._sweep.ask()
        if not all(t.state.is_finished() for t in main):
            return None  # which points are re-run depends on how every main trial ends
        if enqueue_replicates(self._sweep) == 0:
            return Searcher.FINISHED  # nothing to re-run: no main trial has a point
        return self._sweep.ask()  # the oldest WAITING trial: a replicate

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        number = self._numbers.pop(trial_id)
        if error:
            attrs = self._sweep.frozen(number).user_attrs
            reason = attrs.get(Attr.ERROR.value, "the trial's worker died; see tune/ in the run directory")
            record_failure(self._sweep, number, reason)


def enqueue_replicates(sweep: SweepStudy) -> int:
    """Enqueues the replicates not in the study yet; returns how many are waiting to be asked for.

    Call it once every main trial has finished: their outcomes decide which points are re-run.
    """
    trials = sweep.trials()
    enqueued = {
        (t.user_attrs[Attr.REPLICATE_OF.value], t.user_attrs[Attr.SEED.value]) for t in trials if is_replicate(t)
    }
    for replicate in replicates_due(
        [t for t in trials if not is_replicate(t)],
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
