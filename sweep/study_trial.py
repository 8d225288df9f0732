"""One trial run against its Optuna trial: every report goes to the study, the outcome is told.

The Ray Tune trainable calls this with the real proxy trial; tests call it with a scripted one,
as Optuna tests its pruners. A trial already finished in the study (a retry after its tell, or a
rerun racing a crash) is not run again.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable

from sweep.pruning import PruningReporter
from sweep.record import Attr, Status, record_result, status_of
from sweep.study import SweepStudy
from train_entry.trial_config import Metrics, TrialResult

Report = Callable[[Metrics], bool]
"""What a proxy trial calls at each evaluation; True stops it."""


def run_study_trial(
    sweep: SweepStudy,
    number: int,
    run: Callable[[Report], TrialResult],
    *,
    on_report: Callable[[Metrics], None] = lambda metrics: None,
) -> Status:
    """Runs `run(report)` as Optuna trial `number` and records its outcome; returns its status.

    An exception is stored on the trial (so that its FAILED reason survives the retries) and
    raised again for Ray Tune to retry the trial.
    """
    frozen = sweep.frozen(number)
    if frozen.state.is_finished():
        return status_of(frozen)
    trial = sweep.trial(number)
    trial.set_user_attr(Attr.ATTEMPTS.value, frozen.user_attrs.get(Attr.ATTEMPTS.value, 0) + 1)
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
