"""The search space: the spec's `search` schema turned into Optuna distributions, a grid, and back.

This is the one place that knows how lr_fraction and the mix ratio are parameterised in Optuna,
so the sampler, the trial and the trials table all read a trial's point the same way.
"""

from __future__ import annotations

import enum
import itertools
import math
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution

from sweep.spec import LRFractionRange, MixRange, SearchConfig
from train_entry.mix import MixRatio

EDGE_ZONE = 0.05
"""Share of a continuous range (in its sampling scale) next to a bound that counts as "on" it:
an optimum that close to a bound says the best value may lie beyond it."""


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


@dataclass(frozen=True)
class SearchSpace:
    """Optuna's view of the spec's search section. Bounds are inclusive, as in the spec."""

    lr_fraction: LRFractionRange | tuple[float, ...]
    mix: MixRange | tuple[MixRatio, ...]

    @classmethod
    def from_config(cls, search: SearchConfig) -> SearchSpace:
        lr = search.lr_fraction if isinstance(search.lr_fraction, LRFractionRange) else tuple(search.lr_fraction)
        mix = search.mix if isinstance(search.mix, MixRange) else tuple(search.mix)
        return cls(lr_fraction=lr, mix=mix)

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
        if isinstance(self.lr_fraction, LRFractionRange) or isinstance(self.mix, MixRange):
            raise ValueError("a grid needs listed values for both lr_fraction and mix, got a range")
        return [
            {Param.LR_FRACTION.value: lr, Param.MIX.value: str(mix)}
            for lr, mix in itertools.product(self.lr_fraction, self.mix)
        ]

    def point(self, params: dict[str, Any]) -> Point:
        """Reads a trial's Optuna params back into an lr_fraction and a mix ratio."""
        lr = float(params[Param.LR_FRACTION.value])
        if Param.MIX.value in params:
            return Point(lr, MixRatio.parse(params[Param.MIX.value]))
        # general / domain = e^x with general + domain = 1, so domain_share = 1 / (1 + e^x).
        share = 1.0 / (1.0 + math.exp(params[Param.MIX_LOG_RATIO.value]))
        return Point(lr, MixRatio.from_domain_share(share))

    def edges(self, point: Point) -> list[str]:
        """Plain-language notes for each searched bound the point sits on (empty: interior)."""
        lr, share = self._axes()
        notes = [note for note in (lr.edge(point.lr_fraction),) if note]
        share_note = share.edge(point.mix.domain_share)
        if share_note:
            notes.append(f"{share_note} (mix {point.mix})")
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
