"""The surrogate: domain_gain and forgetting as smooth functions of (log lr_fraction, log general:domain),
fitted to the trials that ran their whole budget, so that a choice comes with intervals and a probability.

One Gaussian process per metric, scikit-learn's `GaussianProcessRegressor`: a Matern(nu=2.5) kernel with
a length scale per axis times a learned amplitude, plus a learned white noise (the seed-to-seed and
evaluation noise, which replicates at one point pin down), on inputs scaled to the searched box and
targets normalised (`normalize_y`). The optimiser's restarts are seeded, so a fit is a function of its
rows. Why scikit-learn's GP:
- Optuna's GP (`optuna._gp`, behind `GPSampler`) is private: its functions and their signatures change
  between minor releases, and it exposes neither the posterior covariance nor the learned noise as an API.
- BoTorch would add GPyTorch and a second tensor stack to fit two 2-D functions of ~30 points; its
  strengths (batched acquisition, many outputs, GPU) are not what a sweep's summary needs.
- scikit-learn's is public and stable, exact (Cholesky) at this size, fits in milliseconds on a CPU,
  and gives the posterior mean, standard deviation and joint covariance that the pick and its evidence
  need (`sweep/choice/pick.py`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import ndtr
from threadpoolctl import threadpool_limits

from sweep.spec.space import LRFractionRange, MixRange, SearchSpace
from sweep.study.record import Status
from sweep.study.row import TrialRow
from train_entry.config import StrictConfig

if TYPE_CHECKING:
    # scikit-learn is imported when a surrogate is fitted: the spec imports this module (through
    # sweep.choice.pick), and every command reads a spec.
    from sklearn.gaussian_process import GaussianProcessRegressor

MIN_DISTINCT_POINTS = 4
"""Fewer distinct completed points than this and there is no surrogate: a 2-D surface with a length
scale per axis, an amplitude and a noise level is not determined by three points."""
SEED = 0
"""Seeds the optimiser's restarts: the same rows give the same fit."""
RESTARTS = 3
"""Extra optimiser starts from random hyper-parameters: the marginal likelihood of a small noisy sample
often has a second optimum (all noise vs. a wiggly surface); four starts find the better one in
~0.1 s for 30 points."""
LENGTH_SCALE_BOUNDS = (0.25, 100.0)
"""In units of the searched box (0 to 1 along each axis). The 15-30 trials of a sweep lie about a fifth
of the box apart: a shorter length scale leaves neighbours uncorrelated, where noise and surface cannot
be told apart, and the fit then took the noise for a wiggly surface known exactly at every trial (on a
flat synthetic landscape, every tried point "distinguishable" from the pick). 100 is flat across the box."""
NOISE_BOUNDS = (1e-6, 2.0)
"""White-noise variance relative to the metric's variance over the trials (normalize_y): from nearly
noiseless to noise that explains everything."""
Z90 = 1.6448536269514722
"""Half-width of a central 90 % normal interval, in standard deviations."""


@dataclass(frozen=True)
class Predictions:
    """One metric at a set of points: the smooth surface's posterior, and the noise of one measurement."""

    mean: np.ndarray
    sd: np.ndarray
    """Of the smooth (noise-free) value: how sure the surrogate is of the surface there."""
    noise_sd: float
    """Of one measurement around the surface (learned): a re-run at the point scatters this much more."""

    @property
    def remeasured_sd(self) -> np.ndarray:
        """Of a new measurement at the point: the surface's uncertainty and the noise together."""
        return np.sqrt(self.sd**2 + self.noise_sd**2)

    def probability_at_most(self, limit: float) -> np.ndarray:
        """P(a re-measured value <= limit) under the normal predictive distribution."""
        return ndtr((limit - self.mean) / np.maximum(self.remeasured_sd, 1e-300))


class MetricFit(StrictConfig):
    """What the surrogate learned about one metric: how noisy it is and how fast it changes."""

    noise_sd: float
    """Learned standard deviation of one measurement around the smooth surface, in the metric's units."""
    signal_sd: float
    """Learned amplitude of the surface's variation, in the metric's units."""
    length_scale_lr: float
    """Along log lr_fraction, as a share of the searched range: small is a fast change, >> 1 is flat."""
    length_scale_mix: float
    """Along log(general / domain), as a share of the searched range."""


class SurrogateFit(StrictConfig):
    points: int
    """Completed trials fitted (replicates of a point each count)."""
    distinct_points: int
    domain_gain: MetricFit
    forgetting: MetricFit


@dataclass(frozen=True)
class Box:
    """The searched box in the surrogate's coordinates, log lr_fraction and log(general / domain), each to [0, 1]."""

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


@dataclass(frozen=True)
class Surrogate:
    """Fitted GPs of domain_gain and forgetting over a sweep's searched box."""

    box: Box
    gain: GaussianProcessRegressor
    forgetting: GaussianProcessRegressor
    fit: SurrogateFit

    def predict(self, lr_fraction: Sequence[float], domain_share: Sequence[float]) -> tuple[Predictions, Predictions]:
        """(domain_gain, forgetting) at the points (lr_fraction[i], domain_share[i])."""
        x = self.box.scaled(lr_fraction, domain_share)
        return (
            _predict(self.gain, x, self.fit.domain_gain.noise_sd),
            _predict(self.forgetting, x, self.fit.forgetting.noise_sd),
        )

    def gain_difference(
        self, a: tuple[float, float], others: Sequence[tuple[float, float]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and sd of gain(a) - gain(b) for each b in others, points as (lr_fraction, domain_share):
        from the joint posterior of the smooth surface, so two points fitted from the same trials are
        compared with their correlation, not as if independent."""
        points = [a, *others]
        x = self.box.scaled([p[0] for p in points], [p[1] for p in points])
        with _one_blas_thread():
            mean, cov = self.gain.predict(x, return_cov=True)
        cov = cov - np.eye(len(points)) * self.fit.domain_gain.noise_sd**2  # the surface's, not a measurement's
        variance = cov[0, 0] + np.diag(cov)[1:] - 2.0 * cov[0, 1:]
        return mean[0] - mean[1:], np.sqrt(np.maximum(variance, 0.0))


def completed(rows: Iterable[TrialRow]) -> list[TrialRow]:
    """The rows a surrogate is fitted to: trials that ran their whole budget with finite final metrics, one per
    (point, seed). A second trial at the same point and seed (a sampler proposing a listed point again) trains
    the same run again: it is no second observation, and counted as one it would pass for zero seed noise."""
    measured: dict[tuple, TrialRow] = {}
    for row in sorted(rows, key=lambda row: row.number):
        if (
            row.status is Status.COMPLETED
            and row.domain_gain is not None
            and row.forgetting is not None
            and math.isfinite(row.domain_gain)
            and math.isfinite(row.forgetting)
        ):
            seed = row.seed if row.seed is not None else f"trial {row.number}"  # rows made by hand
            measured.setdefault((point_key(row.lr_fraction, row.domain_share), seed), row)
    return list(measured.values())


def point_key(lr_fraction: float, domain_share: float) -> tuple[float, float]:
    """Identifies a point: replicates of one (lr_fraction, mix) share it."""
    return round(lr_fraction, 12), round(domain_share, 12)


def distinct_points(rows: Iterable[TrialRow]) -> int:
    return len({point_key(row.lr_fraction, row.domain_share) for row in completed(rows)})


def fit_surrogate(rows: Iterable[TrialRow], space: SearchSpace) -> Surrogate | None:
    """GPs of domain_gain and forgetting over the completed rows (replicates included), or None with fewer
    than MIN_DISTINCT_POINTS distinct points."""
    used = sorted(completed(rows), key=lambda row: row.number)  # one order: one fit
    distinct = distinct_points(used)
    if distinct < MIN_DISTINCT_POINTS:
        return None
    box = Box.of(space)
    x = box.scaled([row.lr_fraction for row in used], [row.domain_share for row in used])
    gain, gain_fit = _fit(x, np.array([row.domain_gain for row in used]))
    forgetting, forgetting_fit = _fit(x, np.array([row.forgetting for row in used]))
    fit = SurrogateFit(points=len(used), distinct_points=distinct, domain_gain=gain_fit, forgetting=forgetting_fit)
    return Surrogate(box=box, gain=gain, forgetting=forgetting, fit=fit)


def _fit(x: np.ndarray, y: np.ndarray) -> tuple[GaussianProcessRegressor, MetricFit]:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    kernel = ConstantKernel(1.0, (1e-3, 1e3)) * Matern(
        length_scale=[0.5, 0.5], length_scale_bounds=LENGTH_SCALE_BOUNDS, nu=2.5
    ) + WhiteKernel(noise_level=0.1, noise_level_bounds=NOISE_BOUNDS)
    gp = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=RESTARTS, random_state=SEED)
    with warnings.catch_warnings(), _one_blas_thread():
        # A length scale or the noise at its bound is an answer (flat along that axis; noiseless), not a failure.
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp.fit(x, y)
    scale = _y_scale(y)
    signal, noise = gp.kernel_.k1, gp.kernel_.k2
    length = np.broadcast_to(signal.k2.length_scale, (2,))
    return gp, MetricFit(
        noise_sd=float(math.sqrt(noise.noise_level) * scale),
        signal_sd=float(math.sqrt(signal.k1.constant_value) * scale),
        length_scale_lr=float(length[0]),
        length_scale_mix=float(length[1]),
    )


def _predict(gp: GaussianProcessRegressor, x: np.ndarray, noise_sd: float) -> Predictions:
    with _one_blas_thread():
        mean, sd = gp.predict(x, return_std=True)  # sd of a measurement: the white noise is on the kernel's diagonal
    return Predictions(mean=mean, sd=np.sqrt(np.maximum(sd**2 - noise_sd**2, 0.0)), noise_sd=noise_sd)


def _one_blas_thread() -> threadpool_limits:
    """Matrices of a few hundred rows gain nothing from more BLAS threads, and on a machine busy with
    trials OpenBLAS's waiting threads made a fit eight times slower (2 s instead of 0.25 s on 2 cores)."""
    return threadpool_limits(limits=1, user_api="blas")


def _y_scale(y: np.ndarray) -> float:
    """The standard deviation normalize_y divides by (scikit-learn takes a constant target's as 1)."""
    std = float(np.std(y))
    return std if std >= 10 * np.finfo(float).eps else 1.0


def _unit(values: np.ndarray, bounds: tuple[float, float]) -> np.ndarray:
    low, high = bounds
    # One searched value (a single listed lr_fraction or mix): the axis carries no information.
    return (values - low) / (high - low) if high > low else np.zeros_like(values)
