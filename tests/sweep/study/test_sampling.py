"""Every sampler passes the same suite: seeded, within the space, and told the forgetting constraint."""

from typing import get_args

import pytest
from optuna.distributions import CategoricalDistribution
from optuna.trial import TrialState
from scripted import BASE, STEPS, scripted, spec_with

from sweep.study.config import SearchConfig
from sweep.study.sampling import SamplerConfig
from sweep.study.study import open_study
from sweep.study.trial import run_study_trial

SAMPLERS = [get_args(member)[0].model_fields["type"].default for member in get_args(get_args(SamplerConfig)[0])]
"""Every sampler a spec may name: a new one joins the suite by being one."""
SEARCH = {"pruner": {"type": "none"}, "forgetting_guard": None}


def search(sampler: str, **more) -> dict:
    """The suite's search: 8 trials over the default space; the grid over listed values, 3 x 5 points."""
    if sampler == "grid":
        return {"sampler": sampler, "lr_fraction": [0.05, 0.1, 0.2], **SEARCH, **more}
    return {"sampler": sampler, "num_trials": 8, **SEARCH, **more}


def run_trials(sweep, count):
    points = []
    for k in range(count):
        trial = sweep.ask()
        points.append(trial.params)
        # Forgetting rises with the trial number: early trials feasible, later ones not.
        run_study_trial(sweep, trial.number, scripted([0.1 * k] * len(STEPS), forgetting=0.01 * k), base=BASE)
    return points


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_sampler_proposes_points_in_the_space_and_stores_the_constraint(open_sweep, sampler):
    sweep = open_sweep(**search(sampler))
    run_trials(sweep, 6)  # past the 4 random start-up trials, so the model proposes the last two
    distributions = sweep.plan.space.distributions
    ran = [trial for trial in sweep.trials() if trial.state is not TrialState.WAITING]  # a grid's points to come
    assert len(ran) == 6
    for trial in ran:
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
        spec = spec_with(**search(sampler, seed=7))
        return run_trials(open_study(spec.plan(), url=f"sqlite:///{tmp_path / name}.db", name=name), 3)

    assert first_points("a") == first_points("b")


def test_the_suite_covers_every_sampler():
    assert sorted(SAMPLERS) == ["gp", "grid", "nsga2", "random", "tpe"]


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_a_sampler_reads_as_its_name_or_its_type_and_is_written_back_as_its_name(sampler):
    """A spec and the plan stored with a study read the same whichever way a sampler is written."""
    config = SearchConfig(sampler={"type": sampler}, num_trials=15)
    assert config == SearchConfig(sampler=sampler, num_trials=15)
    assert config.model_dump(mode="json")["sampler"] == sampler
    assert SearchConfig.model_validate(config.model_dump(mode="json")) == config
