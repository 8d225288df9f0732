"""The Optuna sampler a sweep asks for its next point: one config class per sampler, told apart by `type` (as the
pruners in sweep.study.pruning), each building its Optuna sampler and saying what it needs of the space.

`search.sampler` is a sampler's name (`tpe`) or a mapping with its `type` (`{type: tpe}`); a sampler with only
defaults is written back as its name, so a spec and the plan stored with a study read the same either way. `grid`
is a sampler like the others: it runs every listed point once, enqueued in the study before any is asked for.

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

from abc import ABC, abstractmethod
from typing import Annotated, Any, Literal

import optuna
from optuna.samplers import BaseSampler
from pydantic import BeforeValidator, Discriminator, Tag, model_serializer

from sweep.space import SearchSpace
from train_entry.config import SEED_LIMIT, StrictConfig, shown


def _startup(num_trials: int) -> int:
    # A quarter of the trials sampled at random before the model steers: the default 10 of TPE
    # and GP would leave a 16-trial sweep almost unguided.
    return max(4, num_trials // 4)


class _Sampler(StrictConfig, ABC):
    """What every sampler config does: build its Optuna sampler, check the space suits it, and name the points
    it runs whatever the trials' outcomes (none but the grid's)."""

    type: str
    """The sampler's name; each sampler's own config narrows it to that name."""

    @model_serializer(mode="wrap")
    def _as_name(self, handler: Any) -> Any:
        dumped = handler(self)
        return dumped["type"] if isinstance(dumped, dict) and set(dumped) == {"type"} else dumped

    @abstractmethod
    def build(self, *, seed: int, num_trials: int) -> BaseSampler:
        """The Optuna sampler, seeded; `num_trials` sizes a model-based sampler's random start."""

    def check_space(self, space: SearchSpace, *, num_trials: int) -> None:
        """ValueError naming the spec keys when the space does not suit the sampler: a model-based or random sampler
        draws lr_fraction from a range."""
        if isinstance(space.lr_fraction, list):
            raise ValueError(f"search.sampler {self.type} needs a space.lr_fraction range {{low, high, log}}")

    def own_trials(self, space: SearchSpace) -> int | None:
        """The trial count the sampler sets itself (filled in for a num_trials left out); None: num_trials says."""
        return None

    def points(self, space: SearchSpace) -> list[dict[str, Any]]:
        """Points enqueued in the study when it is made, run before any is sampled."""
        return []

    @property
    def fixed_design(self) -> bool:
        """Whether it runs the same points whatever the trials' outcomes (what a ladder needs at every rung)."""
        return False


class TpeSamplerConfig(_Sampler):
    """Optuna's TPE, multivariate over (lr_fraction, mix); the default."""

    type: Literal["tpe"] = "tpe"

    def build(self, *, seed: int, num_trials: int) -> BaseSampler:
        # constant_liar keeps concurrent trials from being proposed at the same point; with one
        # trial at a time no trial is running when the next is asked for, and it changes nothing.
        return optuna.samplers.TPESampler(
            seed=seed, n_startup_trials=_startup(num_trials), constant_liar=True, multivariate=True
        )


class GpSamplerConfig(_Sampler):
    """Optuna's Gaussian-process sampler."""

    type: Literal["gp"] = "gp"

    def build(self, *, seed: int, num_trials: int) -> BaseSampler:
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=_startup(num_trials))


class Nsga2SamplerConfig(_Sampler):
    """Optuna's NSGA-II, one generation per startup's worth of trials."""

    type: Literal["nsga2"] = "nsga2"

    def build(self, *, seed: int, num_trials: int) -> BaseSampler:
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=_startup(num_trials))


class RandomSamplerConfig(_Sampler):
    """Uniform draws over the space (log-uniform where the space says log)."""

    type: Literal["random"] = "random"

    def build(self, *, seed: int, num_trials: int) -> BaseSampler:
        return optuna.samplers.RandomSampler(seed=seed)


class GridSamplerConfig(_Sampler):
    """Every combination of the listed lr_fraction values and mix ratios, each once."""

    type: Literal["grid"] = "grid"

    def build(self, *, seed: int, num_trials: int) -> BaseSampler:
        # The grid runs enqueued points only; every enqueued param is fixed, so nothing is sampled.
        return optuna.samplers.RandomSampler(seed=seed)

    def check_space(self, space: SearchSpace, *, num_trials: int) -> None:
        if not space.listed:
            raise ValueError("search.sampler grid needs listed values for both space.lr_fraction and space.mix")
        grid = len(space.lr_fraction) * len(space.mix)
        if num_trials != grid:
            # A grid runs every point exactly once; a different count would be silently ignored.
            raise ValueError(
                f"search.sampler grid runs every combination ({grid}), got search.num_trials={num_trials}; "
                "remove num_trials"
            )

    def own_trials(self, space: SearchSpace) -> int | None:
        return len(space.lr_fraction) * len(space.mix) if space.listed else None

    def points(self, space: SearchSpace) -> list[dict[str, Any]]:
        return space.grid()

    @property
    def fixed_design(self) -> bool:
        return True


def _sampler_mapping(value: Any) -> Any:
    # A name alone is that sampler with its defaults, as it is written back.
    if isinstance(value, str):
        return {"type": value}
    if not isinstance(value, dict | _Sampler):
        raise ValueError(
            f"give a sampler's name (e.g. tpe) or a mapping with its type (e.g. {{type: grid}}), got {shown(value)}"
        )
    return value


def _sampler_type(value: Any) -> str:
    return value.get("type", "tpe") if isinstance(value, dict) else value.type


SamplerConfig = Annotated[
    Annotated[TpeSamplerConfig, Tag("tpe")]
    | Annotated[GpSamplerConfig, Tag("gp")]
    | Annotated[Nsga2SamplerConfig, Tag("nsga2")]
    | Annotated[RandomSamplerConfig, Tag("random")]
    | Annotated[GridSamplerConfig, Tag("grid")],
    Discriminator(_sampler_type),
    BeforeValidator(_sampler_mapping),
]
"""The Optuna sampler that proposes each trial's point, by name or `type`."""


def make_sampler(sampler: SamplerConfig, *, seed: int, num_trials: int, trials_before: int = 0) -> BaseSampler:
    """The sampler seeded with `seed` plus the trials the study already holds."""
    return sampler.build(seed=(seed + trials_before) % SEED_LIMIT, num_trials=num_trials)
