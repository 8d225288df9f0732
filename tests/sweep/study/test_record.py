"""Every evaluation of a trial is kept in its Optuna trial, as it is reported and when it ends."""

import pytest
from optuna.trial import TrialState
from scripted import BASE, STEPS, scripted

from sweep.study.record import Attr, history_of
from sweep.study.trial import run_study_trial

GAINS = [0.1 + 0.02 * k for k in range(len(STEPS))]


def test_history_grows_with_each_report_and_holds_every_evaluation_at_the_end(open_sweep):
    sweep = open_sweep(sampler="random", pruner={"type": "none"})
    number = sweep.ask().number
    seen: list[list[int]] = []
    run = scripted(GAINS)

    def watched(report):
        def spying(metrics):
            stop = report(metrics)
            # Read back from storage, as a report of the running sweep would.
            seen.append([m.step for m in history_of(sweep.frozen(number))])
            return stop

        return run(spying)

    run_study_trial(sweep, number, watched, base=BASE)
    assert seen == [list(STEPS[: k + 1]) for k in range(len(STEPS))]
    history = history_of(sweep.frozen(number))
    assert [m.domain_gain for m in history] == pytest.approx(GAINS)


def test_a_retry_replaces_the_failed_attempts_evaluations_instead_of_appending_them(open_sweep):
    sweep = open_sweep(sampler="random", pruner={"type": "none"})
    number = sweep.ask().number

    def crashes_at_the_third_evaluation(report):
        def report_then_crash(metrics):
            report(metrics)
            if metrics.step == STEPS[2]:
                raise RuntimeError("out of memory")
            return False

        return scripted(GAINS)(report_then_crash)

    with pytest.raises(RuntimeError):
        run_study_trial(sweep, number, crashes_at_the_third_evaluation, base=BASE)
    assert [m.step for m in history_of(sweep.frozen(number))] == list(STEPS[:3])

    steps_during_retry = []

    def retry(report):
        def spying(metrics):
            stop = report(metrics)
            steps_during_retry.append([m.step for m in history_of(sweep.frozen(number))])
            return stop

        return scripted(GAINS)(spying)

    run_study_trial(sweep, number, retry, base=BASE)
    assert steps_during_retry[0] == [STEPS[0]]  # the earlier attempt's later steps are gone
    assert [m.step for m in history_of(sweep.frozen(number))] == list(STEPS)
    assert sweep.frozen(number).state is TrialState.COMPLETE


def test_a_trial_recorded_before_histories_were_kept_reads_as_none_and_one_without_evaluations_as_empty(open_sweep):
    sweep = open_sweep(sampler="random", pruner={"type": "none"})
    old = sweep.ask()
    old.set_user_attr(Attr.LAST.value, {"step": 200, "domain_gain": 0.1})
    fresh = sweep.ask()
    assert history_of(sweep.frozen(old.number)) is None
    assert history_of(sweep.frozen(fresh.number)) == []
