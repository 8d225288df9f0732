"""The Optuna sampler a sweep asks for its next point.

The forgetting budget is a constraint, not a second objective: each trial stores
`forgetting - budget` with `Trial.set_constraint` when it is told (see sweep.study.record), and
TPE, GP and NSGA-II all read `trial.constraints` to learn to propose feasible points. That is
Optuna 5's replacement for the samplers' deprecated `constraints_func`, and it needs nothing
from the sampler, so the driver and the trials cannot disagree on it.

A resumed sweep must not draw again what it has already run. A sampler seeded with `search.seed`
alone starts its random stream over on every rerun, so the first trial a rerun asks for repeats
trial 0 at the same seed. Optuna's RDB tutorial restores a sampler by pickling it, and Ray Tune's
searchers save their state as pickles too (`Searcher.save`, `Tuner.restore`); a pickle beside the
study is state outside it, stale after a `kill -9`. So the seed follows the study instead: a driver
that finds N trials in it seeds its sampler with `search.seed + N`. A new sweep draws exactly what
`search.seed` always drew, and a rerun is still a function of the study it resumes.
"""

from __future__ import annotations

import optuna
from optuna.samplers import BaseSampler

from sweep.study.config import SearchConfig
from train_entry.config import SEED_LIMIT


def make_sampler(search: SearchConfig, *, trials_before: int = 0) -> BaseSampler:
    """The sampler `search.sampler` names, seeded with `search.seed` plus the trials the study already holds."""
    seed = (search.seed + trials_before) % SEED_LIMIT
    if search.sampler in ("random", "grid"):
        # A grid runs enqueued points only; every enqueued param is fixed, so nothing is sampled.
        return optuna.samplers.RandomSampler(seed=seed)
    # A quarter of the trials sampled at random before the model steers: the default 10 of TPE
    # and GP would leave a 16-trial sweep almost unguided.
    startup = max(4, search.num_trials // 4)
    if search.sampler == "tpe":
        # constant_liar keeps concurrent trials from being proposed at the same point; with one
        # trial at a time no trial is running when the next is asked for, and it changes nothing.
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup, constant_liar=True, multivariate=True)
    if search.sampler == "gp":
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=startup)
    return optuna.samplers.NSGAIISampler(seed=seed, population_size=startup)
