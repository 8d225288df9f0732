"""The size curve of the form that bends (size-curve, sweep.law.forms): each model size in the rows has its own
fitted level, g_k = log of its size factor, and a Gaussian process in log10 N with a linear trend carries g between
and beyond them.

The trend is a power law (a straight line in log N, as the other forms' (N / N_ref)^-nu); the process lets the
levels bend away from it where the rungs do, and its variance says how far the curve may have bent by the target:
universal kriging with a linear basis under a vague prior (Rasmussen and Williams, "Gaussian Processes for Machine
Learning", 2006, section 2.7, Eq. 2.42), its amplitude estimated from the levels' departures from the line (the
restricted maximum likelihood estimate for a known correlation). With two sizes the line passes through both and
nothing bends; with one, g is that size's level.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from pydantic import Field, model_validator
from scipy.linalg import cho_factor, cho_solve
from scipy.stats import chi2

from train_entry.config import StrictConfig

LENGTH = 1.0
"""Decades of N over which the bend is correlated: about the span of a ladder (1.2 to 1.5 decades), so that a bend
the rungs show is followed between them and fades toward the trend a decade or two beyond."""
NUGGET = 1e-6
"""Relative jitter on the correlation's diagonal, for a stable factorisation of sizes closer than LENGTH."""
LEVEL_BOUND = 10.0
"""|g| at most this: a size factor of e^10 is no model's."""


class SizeCurve(StrictConfig):
    """g(log10 N) through each model size's fitted level, and a draw from its uncertainty (a bootstrap refit's)."""

    sizes: list[float] = Field(min_length=1, max_length=1000)
    """log10 N of each model size in the rows, ascending."""
    levels: list[float] = Field(min_length=1, max_length=1000)
    """g at each size, the first 0: the form's P and B carry the level there."""
    draw: float = Field(0.0, ge=-10.0, le=10.0)
    """Standard deviations of the curve's uncertainty this curve lies off its mean, the same at every N: 0 for a
    fit, a normal draw for a bootstrap refit, so that the refits carry how far the curve may bend."""

    @model_validator(mode="after")
    def _knots(self) -> SizeCurve:
        sizes, levels = self.sizes, self.levels
        if len(sizes) != len(levels):
            raise ValueError(f"a size curve needs one level per size, got {len(sizes)} sizes and {len(levels)} levels")
        if not all(math.isfinite(value) for value in sizes + levels):
            raise ValueError("a size curve's sizes and levels are finite")
        if any(b <= a for a, b in itertools.pairwise(sizes)):
            raise ValueError(f"a size curve's sizes (log10 N) ascend, got {sizes}")
        if any(abs(level) > LEVEL_BOUND for level in levels):
            raise ValueError(f"a size curve's levels lie within +-{LEVEL_BOUND:g}, got {levels}")
        return self

    def level(self, parameters: np.ndarray | float) -> np.ndarray:
        """g at N: the curve's mean there, plus `draw` of its standard deviations."""
        mean, sd = self.posterior(np.log10(np.asarray(parameters, dtype=float)))
        return mean + self.draw * sd

    def posterior(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The mean and standard deviation of g at log10 N = `x` (any shape)."""
        return _kriging(tuple(self.sizes), tuple(self.levels)).at(np.asarray(x, dtype=float))

    def noise(self, start: float, here: float, errors: list[float], bound: float) -> tuple[float, float]:
        """What the levels' own estimation errors (independent, of sds `errors`, one per size) make of the curve from
        log10 N `start` to `here` were the true levels on a line: the sd of its mean's change, and the sd at `here`
        its amplitude would reach with one-sided confidence `bound`. The mean is linear in the levels and the
        amplitude a quadratic form of them, so each level's share is the curve through a unit level at that size
        alone; the amplitude's mean over its sizes - 2 degrees of freedom is scaled to its `bound` quantile as a
        chi-square's (Satterthwaite's approximation)."""
        change, amplitude = 0.0, 0.0
        for k, error in enumerate(errors):
            unit = _kriging(tuple(self.sizes), tuple(float(j == k) for j in range(len(self.sizes))))
            mean, _ = unit.at(np.array([start, here]))
            change += (error * float(mean[1] - mean[0])) ** 2
            amplitude += error**2 * unit.amplitude
        freedom = len(self.sizes) - 2
        if freedom > 0:
            amplitude *= float(chi2.ppf(bound, freedom)) / freedom
        own = _kriging(tuple(self.sizes), tuple(self.levels))
        _, sd = own.at(np.array([here]))
        spread = float(sd[0]) * math.sqrt(amplitude / own.amplitude) if own.amplitude > 0.0 else 0.0
        return math.sqrt(change), spread


@functools.lru_cache(maxsize=4096)
def _kriging(sizes: tuple[float, ...], levels: tuple[float, ...]) -> _Kriging:
    """The process through these knots, factorised once: a law is evaluated at thousands of points, and hundreds of
    refits share a handful of curves' worth of work each."""
    return _Kriging(np.array(sizes), np.array(levels))


class _Kriging:
    """Universal kriging with a linear trend through the knots (module docstring)."""

    def __init__(self, sizes: np.ndarray, levels: np.ndarray) -> None:
        self.sizes, self.levels = sizes, levels
        self.amplitude = 0.0
        if len(sizes) < 3:
            return
        self.centre = float(np.mean(sizes))
        basis = np.column_stack([np.ones_like(sizes), sizes - self.centre])
        self.factor = cho_factor(_correlation(sizes, sizes) + NUGGET * np.eye(len(sizes)))
        self.inverse_basis = cho_solve(self.factor, basis)
        self.information = basis.T @ self.inverse_basis
        self.trend = np.linalg.solve(self.information, self.inverse_basis.T @ levels)
        residual = levels - basis @ self.trend
        self.weights = cho_solve(self.factor, residual)
        self.amplitude = float(residual @ self.weights) / (len(sizes) - 2)

    def at(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sizes, levels = self.sizes, self.levels
        if len(sizes) == 1:
            return np.full(x.shape, levels[0]), np.zeros(x.shape)
        if len(sizes) == 2:
            slope = (levels[1] - levels[0]) / (sizes[1] - sizes[0])
            return levels[0] + slope * (x - sizes[0]), np.zeros(x.shape)
        flat = x.reshape(-1)
        cross = _correlation(sizes, flat)
        there = np.column_stack([np.ones_like(flat), flat - self.centre])
        mean = there @ self.trend + cross.T @ self.weights
        remainder = there.T - self.inverse_basis.T @ cross
        explained = np.sum(cross * cho_solve(self.factor, cross), axis=0)
        spread = np.sum(remainder * np.linalg.solve(self.information, remainder), axis=0)
        variance = self.amplitude * (1.0 - explained + spread)
        return mean.reshape(x.shape), np.sqrt(np.maximum(variance, 0.0)).reshape(x.shape)


def _correlation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.exp(-((a[:, None] - b[None, :]) ** 2) / (2.0 * LENGTH**2))
