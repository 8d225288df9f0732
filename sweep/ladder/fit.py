"""How a ladder's picks move with parameter count: a straight line in log N by ordinary least squares, and its
t-based prediction interval at any N, the target's included.

With n rungs the line keeps n - 2 degrees of freedom to judge its own scatter by: 3 rungs leave one, and the
90 % interval's t quantile is then 6.31 (against 1.64 for a known spread), so an extrapolation over five orders
of magnitude is honestly wide; 2 points leave none and get no interval at all.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence

from pydantic import Field
from scipy import stats

from train_entry.config import StrictConfig

LEVEL = 0.90
"""Of every interval: the surrogate's 90 %, so the pick's and the ladder's intervals read alike."""


class Quantity(str, enum.Enum):
    """What is fitted against log N, one line each."""

    LOG_LR_FRACTION = "log_lr_fraction"
    """log of the pick's lr_fraction."""
    LOG_MIX_RATIO = "log_mix_ratio"
    """log(general / domain) of the pick's mix."""
    GAIN = "domain_gain"
    """At the pick: the surrogate's mean (measured for an observed pick without one)."""
    FORGETTING = "forgetting"
    REFERENCE_GAIN = "reference_domain_gain"
    """The surrogate's mean at the ladder's fixed reference point."""
    REFERENCE_FORGETTING = "reference_forgetting"


class Interval(StrictConfig):
    mean: float
    low: float | None
    high: float | None
    """None: no degrees of freedom are left to judge the line's scatter by (two points)."""
    dof: int = Field(ge=0)
    level: float = LEVEL

    def contains(self, value: float) -> bool | None:
        return None if self.low is None or self.high is None else self.low <= value <= self.high


class LineFit(StrictConfig):
    """y = intercept + slope x log N over the rungs' values."""

    points: int = Field(ge=2)
    slope: float
    intercept: float
    mean_log_n: float
    sxx: float = Field(gt=0.0)
    """Sum of squared deviations of log N: how far apart the rungs are, the lever arm of the extrapolation."""
    residual_sd: float | None
    """sqrt(sum of squared residuals / (points - 2)); None with two points."""

    @property
    def dof(self) -> int:
        return self.points - 2

    def predict(self, parameters: float) -> Interval:
        """The line at N = parameters with its LEVEL prediction interval: where one more rung's value would fall."""
        x = math.log(parameters)
        mean = self.intercept + self.slope * x
        if self.residual_sd is None or self.dof == 0:
            return Interval(mean=mean, low=None, high=None, dof=0)
        quantile = float(stats.t.ppf(0.5 + LEVEL / 2, self.dof))
        half = quantile * self.residual_sd * math.sqrt(1 + 1 / self.points + (x - self.mean_log_n) ** 2 / self.sxx)
        return Interval(mean=mean, low=mean - half, high=mean + half, dof=self.dof)


def fit_line(parameters: Sequence[float], values: Sequence[float]) -> LineFit | None:
    """The least-squares line of values on log(parameters); None with fewer than two distinct N."""
    x = [math.log(n) for n in parameters]
    if len(x) < 2 or len(set(x)) < 2:
        return None
    mean_x, mean_y = math.fsum(x) / len(x), math.fsum(values) / len(values)
    sxx = math.fsum((xi - mean_x) ** 2 for xi in x)
    slope = math.fsum((xi - mean_x) * (yi - mean_y) for xi, yi in zip(x, values)) / sxx
    intercept = mean_y - slope * mean_x
    residuals = math.fsum((yi - intercept - slope * xi) ** 2 for xi, yi in zip(x, values))
    dof = len(x) - 2
    return LineFit(
        points=len(x),
        slope=slope,
        intercept=intercept,
        mean_log_n=mean_x,
        sxx=sxx,
        residual_sd=math.sqrt(residuals / dof) if dof else None,
    )
