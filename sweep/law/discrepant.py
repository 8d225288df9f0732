"""Laws with a draw of their discrepancy (sweep.law.discrepancy): each bootstrap refit times exp(e_f) in forgetting and
exp(e_g) in domain_gain, e a smooth random function of (log lr_fraction, domain share) at the target with the
discrepancy's sd there, so that the pick's rule, the optimum's position and every interval carry the form's error as
well as the noise.

The functions are Gaussian-process draws by random Fourier features (Rahimi and Recht, "Random features for
large-scale kernel machines", NIPS 2007): a squared-exponential kernel whose length is half the searched box along
each axis, so that a draw may tilt or bow the law across the box, moving its optimum along the budget's contour as a
wrong form does, without rippling within a grid step. The draws are seeded: the same refits get the same draws in
the prediction, the plan's trajectory and a report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sweep.law.model import Law, Values
from sweep.law.optimum import SearchBox

FEATURES = 64
"""Random features per draw: the draw's variance is within a few per cent of the kernel's everywhere in the box."""
LENGTH = 0.5
"""The kernel's length along each axis, as a share of the searched box's extent (log lr_fraction, share)."""


@dataclass(frozen=True)
class Bend:
    """One draw of the relative error e(log lr_fraction, share), in units of its sd (`scale` multiplies it)."""

    frequencies: np.ndarray
    """(FEATURES, 2), in units of the kernel's lengths."""
    phases: np.ndarray
    weights: np.ndarray
    lengths: tuple[float, float]

    def __call__(self, lr_fraction: Values, domain_share: Values) -> np.ndarray:
        u = np.log(np.asarray(lr_fraction, dtype=float)) / self.lengths[0]
        v = np.asarray(domain_share, dtype=float) / self.lengths[1]
        u, v = np.broadcast_arrays(u, v)
        angle = u[..., None] * self.frequencies[:, 0] + v[..., None] * self.frequencies[:, 1] + self.phases
        return math.sqrt(2.0 / len(self.weights)) * (np.cos(angle) @ self.weights)


@dataclass(frozen=True)
class Discrepant:
    """A law with a draw of its discrepancy at one target: a Surface (sweep.law.optimum) like the law itself."""

    law: Law
    forgetting_bend: Bend
    gain_bend: Bend
    forgetting_sd: float
    gain_sd: float

    def forgetting(self, parameters: Values, lr_fraction: Values, time: Values, domain_share: Values) -> np.ndarray:
        error = self.forgetting_sd * self.forgetting_bend(lr_fraction, domain_share)
        return self.law.forgetting(parameters, lr_fraction, time, domain_share) * np.exp(error)

    def domain_gain(self, parameters: Values, lr_fraction: Values, time: Values, domain_share: Values) -> np.ndarray:
        error = self.gain_sd * self.gain_bend(lr_fraction, domain_share)
        return self.law.domain_gain(parameters, lr_fraction, time, domain_share) * np.exp(error)

    def at(self, forgetting_sd: float, gain_sd: float) -> Discrepant:
        """The same draw at other sds (a rung nearer the target would shrink them; none, the law alone)."""
        return Discrepant(self.law, self.forgetting_bend, self.gain_bend, forgetting_sd, gain_sd)


def bends(count: int, box: SearchBox, seed: int) -> list[tuple[Bend, Bend]]:
    """`count` seeded pairs of draws (forgetting's, domain_gain's) over `box`."""
    rng = np.random.default_rng([seed, 50])
    lengths = (
        LENGTH * max(math.log(box.lr_fraction[1] / box.lr_fraction[0]), 0.1),
        LENGTH * max(box.domain_share[1] - box.domain_share[0], 0.05),
    )

    def one() -> Bend:
        return Bend(
            frequencies=rng.standard_normal((FEATURES, 2)),
            phases=rng.uniform(0.0, 2.0 * math.pi, FEATURES),
            weights=rng.standard_normal(FEATURES),
            lengths=lengths,
        )

    return [(one(), one()) for _ in range(count)]


def discrepant(
    laws: Sequence[Law], box: SearchBox, forgetting_sd: float, gain_sd: float, seed: int
) -> list[Discrepant]:
    """Each law with its own seeded draw of the discrepancy, at the given relative sds."""
    return [
        Discrepant(law, pair[0], pair[1], forgetting_sd, gain_sd)
        for law, pair in zip(laws, bends(len(laws), box, seed))
    ]
