"""The noise a law can be held to: the spread between replicates (trials of one rung at one lr_fraction and share,
evaluated at the same tokens, at different seeds), pooled over every replicated point; and how far each rung's rows
lie from a law against it. A law that misses its own rows by much more than the replicates differ does not fit them,
whatever its R2 says.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field
from scipy.stats import chi2

from sweep.law.model import FitQuality
from sweep.law.table import ObservationTable
from train_entry.config import StrictConfig

MISFIT = 5.0
"""A form whose RMS residual on some rung exceeds this many times the replicates' spread does not fit the runs. Up
to it, the misfit is carried as the form's discrepancy (sweep.law.discrepancy) and widens the answer; beyond it the
form misses its own rungs by more than a small correction to it describes. On rows drawn with the replicates' own
noise the ratio stays within 1.0 +- 0.15 per rung of 100 rows (the spread itself, pooled over a few replicated
points, is known to about 25 %); ladders drawn from known laws none of the forms is written as miss by 1.2 to 3.7
times (tests/sweep/law/law_truths.py)."""
BOUND = 0.9
"""The one-sided confidence of the noise's upper bound (Noise.upper): a residual within it is one the replicates' own
sampling error allows, and no form error."""


class Noise(StrictConfig):
    """The replicates' spread of each loss's relative change (standard deviations)."""

    forgetting: float = Field(gt=0.0)
    domain_gain: float = Field(gt=0.0)
    replicated_points: int = Field(ge=0)
    """Points (rung, lr_fraction, share, tokens) evaluated by more than one trial; 0: the spread is assumed."""
    degrees_of_freedom: int = Field(ge=0)

    @property
    def measured(self) -> bool:
        return self.replicated_points > 0

    def upper(self) -> tuple[float, float]:
        """The one-sided BOUND upper confidence bounds of (forgetting, domain_gain)'s sds: a pooled variance over
        nu degrees of freedom is sigma^2 chi2_nu / nu, so sigma lies below s sqrt(nu / chi2_nu(1 - BOUND)) with that
        confidence (32 degrees of freedom: 1.21 s). The spread as it is when it was assumed, not measured."""
        if not self.measured:
            return self.forgetting, self.domain_gain
        factor = math.sqrt(self.degrees_of_freedom / float(chi2.ppf(1.0 - BOUND, self.degrees_of_freedom)))
        return self.forgetting * factor, self.domain_gain * factor

    def line(self) -> str:
        spread = f"forgetting sd {self.forgetting:.2g}, domain_gain sd {self.domain_gain:.2g}"
        if self.measured:
            return f"replicate noise: {spread}, pooled over {self.replicated_points} replicated point(s)"
        return f"replicate noise: {spread} assumed (ladder.law.huber_scale): no two trials ran at one point"


def replicate_noise(table: ObservationTable, assumed: float) -> Noise:
    """The pooled within-point standard deviation of forgetting and domain_gain over every point two or more trials
    evaluated; `assumed` for both when no point was."""
    keys = [
        (rung, round(lr, 9), round(share, 9), round(tokens))
        for rung, lr, share, tokens in zip(
            table.rung.tolist(), table.lr_fraction.tolist(), table.domain_share.tolist(), table.tokens.tolist()
        )
    ]
    _, group = np.unique(np.array([repr(key) for key in keys]), return_inverse=True)
    counts = np.bincount(group)
    replicated = counts[group] > 1
    points = int(np.sum(counts > 1))
    freedom = int(np.sum(counts[counts > 1] - 1))
    if not points:
        return Noise(forgetting=assumed, domain_gain=assumed, replicated_points=0, degrees_of_freedom=0)

    def pooled(values: np.ndarray) -> float:
        means = np.bincount(group, weights=values) / counts
        squares = np.sum((values - means[group])[replicated] ** 2)
        return max(float(np.sqrt(squares / freedom)), 1e-12)

    return Noise(
        forgetting=pooled(table.forgetting),
        domain_gain=pooled(table.domain_gain),
        replicated_points=points,
        degrees_of_freedom=freedom,
    )


class Misfit(StrictConfig):
    """The rung a law misses worst, against the replicates' spread."""

    ratio: float = Field(ge=0.0)
    """Its RMS residual over the spread."""
    residual: float = Field(ge=0.0)
    noise: float = Field(gt=0.0)
    loss: str
    rung: str

    @property
    def fits(self) -> bool:
        return self.ratio <= MISFIT

    def line(self) -> str:
        return f"residual {self.residual:.2g} against noise {self.noise:.2g} in {self.loss} on rung {self.rung}"


def misfit(general: FitQuality, domain: FitQuality, noise: Noise) -> Misfit:
    """The worst rung's RMS residual over the replicates' spread, over both losses."""
    candidates = [
        Misfit(ratio=r.rms / noise.forgetting, residual=r.rms, noise=noise.forgetting, loss="forgetting", rung=r.rung)
        for r in general.rungs
    ] + [
        Misfit(
            ratio=r.rms / noise.domain_gain, residual=r.rms, noise=noise.domain_gain, loss="domain_gain", rung=r.rung
        )
        for r in domain.rungs
    ]
    return max(candidates, key=lambda candidate: candidate.ratio)
