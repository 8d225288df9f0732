"""Seed replicates on a real study with scripted trials: which points are re-run, with which seeds, once."""

import pytest
from ray.tune.search import Searcher
from rich.console import Console
from scripted import BASE, STEPS, scripted, trial_row

from reports.tables import print_outcome
from sweep.choice.observed import select
from sweep.choice.points import point_summaries, replicates_note, seed_noise
from sweep.choice.replicates import is_replicate
from sweep.run.searcher import NUMBER, StudySearcher, enqueue_replicates
from sweep.study.record import Attr, Status
from sweep.study.table import trial_rows
from sweep.study.trial import run_study_trial

OUTCOMES = {0: (0.20, 0.010), 1: (0.30, 0.050), 2: (0.25, 0.015)}
"""Final (domain_gain, forgetting) of the three main trials: trial 1 gains most but forgets over the 0.02 budget."""


def _finish(sweep, number: int, *, gain: float, forgetting: float) -> Status:
    return run_study_trial(sweep, number, scripted([gain] * len(STEPS), forgetting=forgetting), base=BASE)


def test_the_best_feasible_points_are_re_run_with_the_next_seeds_once_every_main_trial_has_ended(open_sweep):
    sweep = open_sweep(num_trials=3, replicates={"top": 2, "seeds": 1}, pruner={"type": "none"})
    searcher = StudySearcher(sweep)
    assert searcher.to_run == 5
    numbers = [searcher.suggest(f"main-{k}")[NUMBER] for k in range(3)]
    for number in numbers[:2]:
        _finish(sweep, number, gain=OUTCOMES[number][0], forgetting=OUTCOMES[number][1])
    assert searcher.suggest("early") is None  # which points are re-run depends on trial 2's outcome too

    _finish(sweep, 2, gain=OUTCOMES[2][0], forgetting=OUTCOMES[2][1])
    replicates = [searcher.suggest(f"replicate-{k}") for k in range(2)]
    assert searcher.suggest("after") == Searcher.FINISHED
    frozen = [sweep.frozen(config[NUMBER]) for config in replicates]
    # Trial 2 (0.25) then trial 0 (0.20); trial 1 forgets over the budget however much it gains.
    assert [t.user_attrs[Attr.REPLICATE_OF.value] for t in frozen] == [2, 0]
    assert [t.user_attrs[Attr.SEED.value] for t in frozen] == [sweep.plan.proxy.seed + 1] * 2
    assert [t.params for t in frozen] == [sweep.frozen(2).params, sweep.frozen(0).params]


def test_more_seeds_than_points_cycle_over_the_points_and_a_rerun_enqueues_nothing_twice(open_sweep):
    sweep = open_sweep(num_trials=2, replicates={"top": 2, "seeds": 2}, pruner={"type": "none"})
    for _ in range(2):
        trial = sweep.ask()
        _finish(sweep, trial.number, gain=0.1 * (trial.number + 1), forgetting=0.01)
    assert enqueue_replicates(sweep) == 4
    assert enqueue_replicates(sweep) == 4  # a second driver after a kill finds them in the study
    waiting = [t for t in sweep.trials() if is_replicate(t)]
    assert sorted((t.user_attrs[Attr.REPLICATE_OF.value], t.user_attrs[Attr.SEED.value]) for t in waiting) == [
        (0, 1),
        (0, 2),
        (1, 1),
        (1, 2),
    ]


def test_a_replicate_runs_to_its_end_however_far_over_the_budget_it_goes(open_sweep):
    sweep = open_sweep(
        num_trials=1, replicates={"top": 1}, forgetting_guard={"margin": 0.0, "min_steps": 1}, pruner={"type": "none"}
    )
    _finish(sweep, sweep.ask().number, gain=0.2, forgetting=0.01)
    enqueue_replicates(sweep)
    replicate = sweep.ask()
    assert _finish(sweep, replicate.number, gain=0.2, forgetting=0.5) is Status.COMPLETED


def test_points_measured_more_than_once_have_a_mean_a_spread_and_a_pooled_noise():
    rows = [
        trial_row(0, 0.1, "2:1", 0.20, 0.010, seed=0),
        trial_row(1, 0.2, "1:1", 0.30, 0.020, seed=0),
        trial_row(2, 0.1, "2:1", 0.22, 0.012, seed=1, replicate_of=0),
        trial_row(3, 0.2, "1:1", 0.26, 0.018, seed=1, replicate_of=1),
        trial_row(4, 0.05, "4:1", 0.10, 0.002, seed=0),
    ]
    points = point_summaries(rows)
    assert [(p.trials, p.n) for p in points] == [([1, 3], 2), ([0, 2], 2), ([4], 1)]
    assert points[0].domain_gain_mean == pytest.approx(0.28)
    assert points[0].domain_gain_sd == pytest.approx(0.04 / 2**0.5)
    assert points[2].domain_gain_sd is None
    noise = seed_noise(points)
    assert (noise.points, noise.degrees_of_freedom) == (2, 2)
    # Pooled: sqrt(((0.04^2 + 0.02^2) / 2) / 2) from two pairs whose differences are 0.04 and 0.02.
    assert noise.domain_gain_sd == pytest.approx(((0.04**2 + 0.02**2) / 4) ** 0.5)
    assert seed_noise(points[2:]) is None


def test_the_rows_of_a_replicate_carry_its_seed_and_the_trial_it_re_runs(open_sweep):
    sweep = open_sweep(num_trials=1, replicates={"top": 1}, pruner={"type": "none"})
    _finish(sweep, sweep.ask().number, gain=0.2, forgetting=0.01)
    enqueue_replicates(sweep)
    _finish(sweep, sweep.ask().number, gain=0.24, forgetting=0.01)
    main, replicate = trial_rows(sweep)
    assert (main.seed, main.replicate_of) == (sweep.plan.proxy.seed, None)
    assert (replicate.seed, replicate.replicate_of) == (sweep.plan.proxy.seed + 1, 0)
    (point,) = point_summaries([main, replicate])
    assert point.domain_gain_mean == pytest.approx(0.22)


def test_a_point_run_twice_at_the_same_seed_is_one_measurement_and_no_seed_spread():
    """Two trials at one point and seed train the same run: pooled, they would pass for zero seed noise."""
    rows = [
        trial_row(0, 0.1, "2:1", 0.20, 0.010, seed=0),
        trial_row(1, 0.1, "2:1", 0.20, 0.010, seed=0),
        trial_row(2, 0.2, "1:1", 0.30, 0.020, seed=0),
        trial_row(3, 0.2, "1:1", 0.26, 0.018, seed=1, replicate_of=2),
    ]
    points = point_summaries(rows)
    assert [(p.trials, p.n) for p in points] == [([2, 3], 2), ([0], 1)]
    noise = seed_noise(points)
    assert (noise.points, noise.degrees_of_freedom) == (1, 1)
    assert noise.domain_gain_sd == pytest.approx(0.04 / 2**0.5)
    assert seed_noise(point_summaries(rows[:2])) is None


def test_fewer_completed_points_than_replicates_top_is_said_with_the_seeds_they_ran_at(open_sweep):
    """One completed point and replicates.top 2: both replicates re-run it, at seeds 1 and 2, which the table
    alone showed as two replicates of trial 0 and nothing said why."""
    sweep = open_sweep(num_trials=1, replicates={"top": 2, "seeds": 1}, pruner={"type": "none"})
    _finish(sweep, sweep.ask().number, gain=0.2, forgetting=0.01)
    assert replicates_note(trial_rows(sweep), top=2) is None  # nothing re-run yet
    enqueue_replicates(sweep)
    for _ in range(2):
        _finish(sweep, sweep.ask().number, gain=0.21, forgetting=0.01)
    note = replicates_note(trial_rows(sweep), top=2)
    assert note == (
        "replicates.top is 2 but only 1 distinct point(s) could be re-run (trial(s) 0): "
        "the 2 replicate(s) re-run them at seeds 1, 2"
    )
    console = Console(width=200, record=True)
    rows = trial_rows(sweep)
    print_outcome(console, select(rows, forgetting_budget=0.02, space=sweep.plan.space), rows, title="s", notes=[note])
    assert f"note: {note}" in console.export_text()
