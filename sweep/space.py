"""The search space (the spec's `space:` section): what a sweep searches, and its one translation into
Optuna distributions, a grid, and back into points.

This is the one place that knows how lr_fraction and the mix ratio are parameterised in Optuna,
so the sampler, the trial and the trials table all read a trial's point the same way. Bounds are
inclusive, in the spec and in Optuna.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution
from pydantic import AfterValidator, Field, field_validator, model_validator

from train_entry.config import StrictConfig
from train_entry.mix import Mix, MixRatio

MAX_LISTED = 1_000
"""Upper bound of listed lr_fraction values and mix ratios."""
EDGE_ZONE = 0.05
"""Share of a continuous range (in its sampling scale) next to a bound that counts as "on" it:
an optimum that close to a bound says the best value may lie beyond it."""


def _fraction(value: float) -> float:
    if not 0.0 < value <= 1.0:
        raise ValueError(f"lr_fraction must be in (0, 1], got {value}")
    return value


LRFraction = Annotated[float, AfterValidator(_fraction)]
"""Peak LR / the base's max_lr."""


class LRFractionRange(StrictConfig):
    low: LRFraction
    high: LRFraction
    log: bool = True
    """Sample on a log scale: LR effects are multiplicative."""

    @model_validator(mode="after")
    def _ordered(self) -> LRFractionRange:
        if self.low > self.high:
            raise ValueError(f"low must not exceed high, got low={self.low}, high={self.high}")
        return self


class MixRange(StrictConfig):
    """A continuous range of mix ratios, searched on the log of general/domain."""

    low: Mix
    high: Mix

    @model_validator(mode="after")
    def _distinct(self) -> MixRange:
        if self.low.log_ratio == self.high.log_ratio:
            raise ValueError(f"low and high are the same ratio ({self.low}); list it instead")
        return self


class Param(str, enum.Enum):
    """Names of the Optuna parameters; a mix is either listed ratios or a log-ratio range."""

    LR_FRACTION = "lr_fraction"
    MIX = "mix"
    """Categorical over the listed "general:domain" strings."""
    MIX_LOG_RATIO = "mix_log_ratio"
    """log(general / domain), uniform between the two ratios of a MixRange."""


@dataclass(frozen=True)
class Point:
    """One place in the search space: what a trial is run with."""

    lr_fraction: float
    mix: MixRatio


class SearchSpace(StrictConfig):
    """What a sweep searches: lr_fraction and the general:domain mix, each a range or listed values."""

    lr_fraction: LRFractionRange | Annotated[list[LRFraction], Field(min_length=1, max_length=MAX_LISTED)]
    """A range {low, high, log} (sampled), or listed values each given once (a grid, or a categorical)."""
    mix: Annotated[list[Mix], Field(min_length=1, max_length=MAX_LISTED)] | MixRange
    """Listed "general:domain" ratios, each ratio once (a categorical), or a {low, high} range searched
    on log(general / domain)."""

    @field_validator("lr_fraction")
    @classmethod
    def _lr_fractions_distinct(cls, value: Any) -> Any:
        if isinstance(value, list):
            _refuse_repeats(value, key=lambda fraction: fraction)
        return value

    @field_validator("mix")
    @classmethod
    def _mixes_distinct(cls, value: Any) -> Any:
        if isinstance(value, list):
            # 1:1 and 2:2 are one mix: the same domain_share, so the same trial.
            _refuse_repeats(value, key=lambda mix: round(mix.domain_share, 12))
        return value

    @property
    def listed(self) -> bool:
        """Both axes list their values: the space is a finite grid."""
        return isinstance(self.lr_fraction, list) and isinstance(self.mix, list)

    @property
    def distributions(self) -> dict[str, BaseDistribution]:
        """The Optuna parameters a trial's point is made of."""
        if isinstance(self.lr_fraction, LRFractionRange):
            lr: BaseDistribution = FloatDistribution(
                self.lr_fraction.low, self.lr_fraction.high, log=self.lr_fraction.log
            )
        else:
            lr = CategoricalDistribution(self.lr_fraction)
        if isinstance(self.mix, MixRange):
            low, high = sorted((self.mix.low.log_ratio, self.mix.high.log_ratio))
            return {Param.LR_FRACTION.value: lr, Param.MIX_LOG_RATIO.value: FloatDistribution(low, high)}
        return {Param.LR_FRACTION.value: lr, Param.MIX.value: CategoricalDistribution([str(m) for m in self.mix])}

    def suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        """Chooses the trial's point through the study's sampler and returns its params.

        A param the trial already has, or one fixed by an enqueued grid point, is kept: this also
        finishes an ask that a driver killed between creating the trial and choosing its point left
        with no params or half of them.
        """
        for name, distribution in self.distributions.items():
            if isinstance(distribution, FloatDistribution):
                trial.suggest_float(name, distribution.low, distribution.high, log=distribution.log)
            else:
                trial.suggest_categorical(name, distribution.choices)
        return trial.params

    def chosen(self, params: dict[str, Any]) -> bool:
        """Whether params hold a whole point (a trial's ask may still be choosing it)."""
        return params.keys() == self.distributions.keys()

    def grid(self) -> list[dict[str, Any]]:
        """Every combination of the listed values, lr_fraction-major, as Optuna params."""
        if not self.listed:
            raise ValueError("a grid needs listed values for both lr_fraction and mix, got a range")
        return [
            {Param.LR_FRACTION.value: lr, Param.MIX.value: str(mix)}
            for lr, mix in itertools.product(self.lr_fraction, self.mix)
        ]

    def params_of(self, lr_fraction: float, mix: MixRatio) -> dict[str, Any]:
        """A point as Optuna params of this space (a confirmation trial's, enqueued at the pick)."""
        if isinstance(self.mix, MixRange):
            return {Param.LR_FRACTION.value: lr_fraction, Param.MIX_LOG_RATIO.value: mix.log_ratio}
        return {Param.LR_FRACTION.value: lr_fraction, Param.MIX.value: str(mix)}

    def point(self, params: dict[str, Any]) -> Point:
        """Reads a trial's Optuna params back into an lr_fraction and a mix ratio."""
        lr = float(params[Param.LR_FRACTION.value])
        if Param.MIX.value in params:
            return Point(lr, MixRatio.parse(params[Param.MIX.value]))
        # general / domain = e^x with general + domain = 1, so domain_share = 1 / (1 + e^x).
        share = 1.0 / (1.0 + math.exp(params[Param.MIX_LOG_RATIO.value]))
        return Point(lr, MixRatio.from_domain_share(share))

    def edges(self, lr_fraction: float, mix: MixRatio, *, shown_mix: str) -> list[str]:
        """Plain-language notes for each searched bound the point sits on (empty: interior)."""
        lr, share = self._axes()
        notes = [note for note in (lr.edge(lr_fraction),) if note]
        share_note = share.edge(mix.domain_share)
        if share_note:
            notes.append(f"{share_note} (mix {shown_mix})")
        return notes

    def _axes(self) -> tuple[_Axis, _Axis]:
        if isinstance(self.lr_fraction, LRFractionRange):
            lr = _Axis(
                "lr_fraction", self.lr_fraction.low, self.lr_fraction.high, log=self.lr_fraction.log, listed=False
            )
        else:
            lr = _Axis("lr_fraction", min(self.lr_fraction), max(self.lr_fraction), log=False, listed=True)
        # Mix edges are judged on domain_share: "more domain" and "less domain" are what a reader
        # widens, whichever way round the ratio is written.
        ratios = (self.mix.low, self.mix.high) if isinstance(self.mix, MixRange) else self.mix
        shares = [m.domain_share for m in ratios]
        share = _Axis("domain_share", min(shares), max(shares), log=False, listed=not isinstance(self.mix, MixRange))
        return lr, share


def _refuse_repeats(values: list[Any], *, key: Callable[[Any], Any]) -> None:
    seen: dict[Any, int] = {}
    for index, value in enumerate(values):
        first = seen.setdefault(key(value), index)
        if first != index:
            raise ValueError(
                f"items {first} and {index} ({values[first]} and {value}) are the same value: a repeated value "
                "would plan a trial twice and run it once; list each value once"
            )


@dataclass(frozen=True)
class _Axis:
    name: str
    low: float
    high: float
    log: bool
    listed: bool
    """Listed values: only the first and last value are edges; a range has an edge zone."""

    def edge(self, value: float) -> str | None:
        if math.isclose(self.low, self.high):
            return None  # a single value: nothing was searched, so there is no edge to widen
        scale = math.log if self.log else float
        zone = 1e-9 if self.listed else EDGE_ZONE * (scale(self.high) - scale(self.low))
        span = f"the searched range [{self.low:.4g}, {self.high:.4g}]"
        if scale(value) - scale(self.low) <= zone:
            return f"{self.name}={value:.4g} is at the low end of {span}; widen it below {self.low:.4g}"
        if scale(self.high) - scale(value) <= zone:
            return f"{self.name}={value:.4g} is at the high end of {span}; widen it above {self.high:.4g}"
        return None


@dataclass(frozen=True)
class Box:
    """The searched box in the surrogate's and the law's coordinates, log lr_fraction and log(general / domain), each to [0, 1]."""

    log_lr: tuple[float, float]
    log_ratio: tuple[float, float]

    @classmethod
    def of(cls, space: SearchSpace) -> Box:
        lr = space.lr_fraction
        lows_highs = (lr.low, lr.high) if isinstance(lr, LRFractionRange) else (min(lr), max(lr))
        ratios = (space.mix.low, space.mix.high) if isinstance(space.mix, MixRange) else space.mix
        logs = [ratio.log_ratio for ratio in ratios]
        return cls((math.log(lows_highs[0]), math.log(lows_highs[1])), (min(logs), max(logs)))

    def scaled(self, lr_fraction: Iterable[float], domain_share: Iterable[float]) -> np.ndarray:
        """Points as rows of (scaled log lr_fraction, scaled log general:domain)."""
        lr = np.log(np.asarray(list(lr_fraction), dtype=float))
        share = np.asarray(list(domain_share), dtype=float)
        ratio = np.log((1.0 - share) / share)
        return np.column_stack([_unit(lr, self.log_lr), _unit(ratio, self.log_ratio)])


def _unit(values: np.ndarray, bounds: tuple[float, float]) -> np.ndarray:
    low, high = bounds
    # One searched value (a single listed lr_fraction or mix): the axis carries no information.
    return (values - low) / (high - low) if high > low else np.zeros_like(values)
