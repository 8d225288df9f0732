"""Ray Tune's search algorithm for a sweep: Optuna's ask on the sweep's study, and nothing else.

Why not Ray's OptunaSearch: it keeps its Optuna trials in its own memory (saved by pickling its
`__dict__`), tells every trial that reported the metric COMPLETE (a pruned trial too), and builds
its study with a NopPruner. Here each trial reports into and tells its own Optuna trial (see
sweep.study_trial), so this searcher only asks the study for the next point, hands a rerun its
interrupted trials first, and records FAILED when Ray Tune gives up on a trial after its retries.
All of its state is in the study, so a new driver after `kill -9` rebuilds it from there.
"""

from __future__ import annotations

from optuna.trial import TrialState
from ray.tune.search import Searcher

from sweep.record import Attr, record_failure
from sweep.study import SweepStudy

NUMBER = "number"
"""The Optuna trial number in a Ray Tune trial's config; the params ride along for Ray's logs."""


class StudySearcher(Searcher):
    def __init__(self, sweep: SweepStudy) -> None:
        super().__init__(metric="domain_gain", mode="max")
        self._sweep = sweep
        # Trials a killed driver left RUNNING: run again under the same number, so the study
        # ends with exactly the planned trials and no duplicates.
        self._interrupted = [t.number for t in sweep.trials() if t.state is TrialState.RUNNING]
        self._numbers: dict[str, int] = {}

    @property
    def to_run(self) -> int:
        """Trials this driver will start: the interrupted ones and those never asked for."""
        asked = sum(t.state is not TrialState.WAITING for t in self._sweep.trials())
        return len(self._interrupted) + self._sweep.plan.planned_trials - asked

    def suggest(self, trial_id: str) -> dict | str | None:
        if self._interrupted:
            number = self._interrupted.pop(0)
            params = self._sweep.params(number)
        elif self.to_run <= 0:
            return Searcher.FINISHED
        else:
            trial = self._sweep.ask()
            number, params = trial.number, trial.params
        self._numbers[trial_id] = number
        return {NUMBER: number, **params}

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        number = self._numbers.pop(trial_id)
        if error:
            attrs = self._sweep.frozen(number).user_attrs
            reason = attrs.get(Attr.ERROR.value, "the trial's worker died; see tune/ in the run directory")
            record_failure(self._sweep, number, reason)
