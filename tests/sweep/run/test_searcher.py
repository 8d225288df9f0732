"""The Ray Tune searcher on a real study, without Ray: asks, resumes interrupted trials, records failures."""

import pytest
from optuna.trial import TrialState
from ray.tune.search import Searcher
from scripted import BASE, STEPS, scripted

from sweep.run.searcher import StudySearcher
from sweep.study.record import Attr
from sweep.study.table import trial_rows
from sweep.study.trial import NUMBER, run_study_trial


def test_a_new_sweep_asks_exactly_the_planned_trials(open_sweep):
    sweep = open_sweep(num_trials=3)
    searcher = StudySearcher(sweep)
    assert searcher.to_run == 3
    configs = [searcher.suggest(f"tune-{k}") for k in range(3)]
    assert [config[NUMBER] for config in configs] == [0, 1, 2]
    assert all(0.05 <= config["lr_fraction"] <= 0.2 for config in configs)
    assert searcher.suggest("tune-3") == Searcher.FINISHED
    assert len(sweep.trials()) == 3


def test_a_rerun_first_reruns_interrupted_trials_under_their_number_then_asks_the_rest(open_sweep):
    sweep = open_sweep(num_trials=4)
    done, interrupted = sweep.ask(), sweep.ask()
    run_study_trial(sweep, done.number, scripted([0.1] * len(STEPS)), base=BASE)
    # What a driver killed with -9 leaves behind: `interrupted` is RUNNING for ever.
    searcher = StudySearcher(open_sweep(num_trials=4))
    assert searcher.to_run == 3
    first = searcher.suggest("a")
    assert first[NUMBER] == interrupted.number and first["lr_fraction"] == interrupted.params["lr_fraction"]
    assert [searcher.suggest(k)[NUMBER] for k in ("b", "c")] == [2, 3]
    assert searcher.suggest("d") == Searcher.FINISHED
    assert len(sweep.trials()) == 4  # nothing duplicated


def test_a_rerun_finishes_an_ask_a_killed_driver_left_without_a_point(open_sweep):
    sweep = open_sweep(num_trials=3)
    # Killed between creating a trial and choosing its point: no params, or only the first one.
    bare, half = sweep.study.ask(), sweep.study.ask()
    half.suggest_float("lr_fraction", 0.05, 0.2, log=True)
    lr_fraction = half.params["lr_fraction"]
    assert [row.number for row in trial_rows(sweep)] == []  # no row until the point is chosen

    searcher = StudySearcher(open_sweep(num_trials=3))
    assert searcher.to_run == 3
    first, second = searcher.suggest("a"), searcher.suggest("b")
    assert [first[NUMBER], second[NUMBER]] == [bare.number, half.number]
    assert second["lr_fraction"] == lr_fraction  # what was chosen is kept
    assert all(sweep.plan.space.chosen(sweep.frozen(n).params) for n in (first[NUMBER], second[NUMBER]))
    assert [row.number for row in trial_rows(sweep)] == [0, 1]
    assert searcher.suggest("c")[NUMBER] == 2 and searcher.suggest("d") == Searcher.FINISHED


def test_a_grid_point_popped_by_a_killed_driver_is_rerun_at_that_point(open_sweep):
    grid = {"sampler": "grid", "lr_fraction": [0.05, 0.1], "mix": ["4:1"], "num_trials": 2}
    sweep = open_sweep(**grid)
    popped = sweep.study.ask()  # the driver died before the point's params were set
    assert popped.params == {} and [row.number for row in trial_rows(sweep)] == [0, 1]

    searcher = StudySearcher(open_sweep(**grid))
    config = searcher.suggest("a")
    assert config[NUMBER] == popped.number and (config["lr_fraction"], config["mix"]) == (0.05, "4:1")
    assert searcher.suggest("b")[NUMBER] == 1 and searcher.suggest("c") == Searcher.FINISHED


def test_a_trial_ray_gave_up_on_is_failed_with_its_stored_error(open_sweep):
    sweep = open_sweep(num_trials=2)
    searcher = StudySearcher(sweep)
    number = searcher.suggest("a")[NUMBER]
    sweep.trial(number).set_user_attr(Attr.ERROR.value, "OSError: disk full")
    searcher.on_trial_complete("a", error=True)
    frozen = sweep.frozen(number)
    assert frozen.state is TrialState.FAIL
    assert frozen.user_attrs[Attr.REASON.value] == "OSError: disk full"


def test_a_trial_that_told_its_own_outcome_is_left_as_it_is(open_sweep):
    sweep = open_sweep(num_trials=2)
    searcher = StudySearcher(sweep)
    number = searcher.suggest("a")[NUMBER]
    run_study_trial(sweep, number, scripted([0.1] * len(STEPS)), base=BASE)
    searcher.on_trial_complete("a", result={"domain_gain": 0.1})
    assert sweep.frozen(number).state is TrialState.COMPLETE


@pytest.mark.parametrize("sampler", ["random", "tpe", "gp", "nsga2"])
def test_a_sweep_resumed_after_each_trial_never_runs_a_point_again(open_sweep, sampler):
    """Each driver runs one trial and dies; the next resumes the study. A sampler seeded with search.seed
    alone would start its stream over each time and draw trial 0's point again at the same seed."""
    for _ in range(3):
        sweep = open_sweep(num_trials=3, sampler=sampler)
        run_study_trial(sweep, StudySearcher(sweep).suggest("next")[NUMBER], scripted([0.1] * len(STEPS)), base=BASE)
    rows = trial_rows(open_sweep(num_trials=3, sampler=sampler))
    assert len(rows) == 3
    assert len({(row.lr_fraction, row.mix, row.seed) for row in rows}) == 3, [(r.lr_fraction, r.mix) for r in rows]
