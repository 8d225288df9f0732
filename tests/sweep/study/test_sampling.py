"""Every sampler passes the same suite: seeded, within the space, and told the forgetting constraint."""

import pytest
from optuna.distributions import CategoricalDistribution
from optuna.trial import TrialState
from scripted import STEPS, scripted, spec_with

from sweep.study.study import open_study
from sweep.study.trial import run_study_trial

SAMPLERS = ["tpe", "gp", "random", "nsga2"]
SEARCH = {"num_trials": 8, "pruner": {"type": "none"}, "forgetting_guard": None}


def run_trials(sweep, count):
    points = []
    for k in range(count):
        trial = sweep.ask()
        points.append(trial.params)
        # Forgetting rises with the trial number: early trials feasible, later ones not.
        run_study_trial(sweep, trial.number, scripted([0.1 * k] * len(STEPS), forgetting=0.01 * k))
    return points


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_sampler_proposes_points_in_the_space_and_stores_the_constraint(open_sweep, sampler):
    sweep = open_sweep(sampler=sampler, **SEARCH)
    run_trials(sweep, 6)  # past the 4 random start-up trials, so the model proposes the last two
    distributions = sweep.plan.space.distributions
    for trial in sweep.trials():
        assert trial.state is TrialState.COMPLETE
        for name, value in trial.params.items():
            dist = distributions[name]
            if isinstance(dist, CategoricalDistribution):
                assert value in dist.choices
            else:
                assert dist.low <= value <= dist.high
        assert trial.constraints == {"forgetting": pytest.approx(0.01 * trial.number - 0.02)}


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_sampler_is_seeded(tmp_path, sampler):
    def first_points(name):
        spec = spec_with(sampler=sampler, seed=7, **SEARCH)
        return run_trials(open_study(spec.plan(), url=f"sqlite:///{tmp_path / name}.db", name=name), 3)

    assert first_points("a") == first_points("b")
