"""The surrogate: domain_gain and forgetting as smooth functions of (log lr_fraction, log general:domain),
fitted to every trial, the stopped ones as censored observations, so that a choice comes with intervals and a
probability.

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

Stopped trials (pruned, guarded, diverged) are not dropped. They are the high-forgetting ones: fitted to the
survivors alone, the forgetting surface drifts low exactly where the sweep stopped looking (missing not at
random). A stopped trial's end is unknown, but bounded below: its forgetting would have ended at least at what
its forecast predicted when it stopped (`TrialRow.forecast_forgetting`, what pruning judged it by; its last
measured value where no forecast was stored), its domain_gain at least at its last value (domain loss only
falls with more steps under a decaying LR). Each is a right-censored observation, fitted by iterated
conditional expectations, the EM algorithm for censored regression of Schmee and Hahn ("A simple method for
regression analysis with censored data", Technometrics 21(4), 1979), with the GP as the regression: a censored
value is replaced by the mean of the GP's predictive normal truncated below at its bound
(`scipy.stats.truncnorm`), the GP is refitted, until the imputed values settle. The imputed value enters with
the truncated distribution's variance added to its diagonal (scikit-learn's per-sample `alpha`), so a bound is
never taken for a measurement. scikit-learn has no censored likelihood; the exact one (Tobit-GP, fitted by
expectation propagation as in Groot and Lucas, "Gaussian process regression with censored data using
expectation propagation", PGM 2012) would need a home-made GP, for two 2-D surfaces of ~30 points where the
imputation already removes the bias that matters: a stopped region can no longer look feasible.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import ndtr
from scipy.stats import truncnorm
from threadpoolctl import threadpool_limits

from sweep.space import Box, SearchSpace
from sweep.study.record import Status
from sweep.study.row import TrialRow
from train_entry.config import StrictConfig

if TYPE_CHECKING:
    # scikit-learn is imported when a surrogate is fitted: the spec imports this module (through
    # sweep.choice.pick), and every command reads a spec.
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import Kernel

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
CENSORED_ROUNDS = 8
"""Most imputation rounds for stopped trials: the imputed values settle in 2-4 on a sweep's rows; a fit that has
not settled by then keeps its last round (each round is at least as good a fit as the survivors-only one)."""
SETTLED = 1e-3
"""Imputed values that move less than this share of the metric's spread in a round have settled."""
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
    text_sd: float = 0.0
    """Of the validation text's share of a measurement: the trials' standard errors over the pool's documents,
    pooled. The search's trials share the pool, so its error is an offset common to the whole surface that the
    learned noise cannot see; a re-run measured on other text adds that text's own."""

    def remeasured_sd(self, text_sd: float | None = None) -> np.ndarray:
        """Of a new measurement at the point, at a fresh seed and on other text of the kind: the surface's
        uncertainty, the seed noise, the pool's text error (the surface was fitted on it) and the new text's
        (`text_sd`; default the pool's: fresh text of the pool's size)."""
        new_text = self.text_sd if text_sd is None else text_sd
        return np.sqrt(self.sd**2 + self.noise_sd**2 + self.text_sd**2 + new_text**2)

    def probability_at_most(self, limit: float, *, text_sd: float | None = None) -> np.ndarray:
        """P(a re-measured value <= limit) under the normal predictive distribution; `text_sd` as remeasured_sd."""
        return ndtr((limit - self.mean) / np.maximum(self.remeasured_sd(text_sd), 1e-300))


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
    text_sd: float = 0.0
    """Root mean square of the fitted trials' standard errors over the pool's documents (TrialRow's *_text_error):
    how much another text of the pool's kind and size moves one measurement; 0 when none was measured."""


class SurrogateFit(StrictConfig):
    trials: list[int]
    """The trials fitted, completed and stopped, by number: the same rows give the same fit (fit_surrogate), so the
    report redraws the very function a pick was chosen on from these."""
    points: int
    """Completed trials fitted (replicates of a point each count)."""
    stopped: int = 0
    """Stopped trials fitted as censored observations (their ends bounded below, module docstring)."""
    distinct_points: int
    domain_gain: MetricFit
    forgetting: MetricFit


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
        return _predict(self.gain, x, self.fit.domain_gain), _predict(self.forgetting, x, self.fit.forgetting)

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
    """The rows a surrogate is fitted to: trials that ran their whole budget with finite figures on the validation
    pool (the search's trials and replicates; a confirmation trial's figures are on its own draw, another text), one
    per (point, seed). A second trial at the same point and seed (a sampler proposing a listed point again) trains
    the same run again: it is no second observation, and counted as one it would pass for zero seed noise."""
    measured: dict[tuple, TrialRow] = {}
    for row in sorted(rows, key=lambda row: row.number):
        if (
            row.status is Status.COMPLETED
            and row.on_pool
            and row.domain_gain is not None
            and row.forgetting is not None
            and math.isfinite(row.domain_gain)
            and math.isfinite(row.forgetting)
        ):
            seed = row.seed if row.seed is not None else f"trial {row.number}"  # rows made by hand
            measured.setdefault((point_key(row.lr_fraction, row.domain_share), seed), row)
    return list(measured.values())


def stopped(rows: Iterable[TrialRow]) -> list[TrialRow]:
    """The rows a surrogate takes as censored: pruned or guarded trials with finite figures on the pool at the step
    they stopped, and diverged trials with finite last interim metrics (no figures: its model blew up; a bound far
    above any text's offset), one per (point, seed), none at a (point, seed) that also ran to the end."""
    ended = {(point_key(row.lr_fraction, row.domain_share), row.seed) for row in completed(rows)}
    found: dict[tuple, TrialRow] = {}
    for row in sorted(rows, key=lambda row: row.number):
        key = (point_key(row.lr_fraction, row.domain_share), row.seed)
        measured = row.on_pool or row.status is Status.DIVERGED
        if row.status in (Status.PRUNED, Status.DIVERGED) and measured and key not in ended and _finite(_bounds(row)):
            found.setdefault(key if row.seed is not None else (key, row.number), row)
    return list(found.values())


def _bounds(row: TrialRow) -> tuple[float | None, float | None]:
    """(domain_gain, forgetting) a stopped trial would have ended at least at."""
    forgetting = row.forecast_forgetting if row.forecast_forgetting is not None else row.forgetting
    return row.domain_gain, forgetting


def _finite(values: Iterable[float | None]) -> bool:
    return all(value is not None and math.isfinite(value) for value in values)


def point_key(lr_fraction: float, domain_share: float) -> tuple[float, float]:
    """Identifies a point: replicates of one (lr_fraction, mix) share it."""
    return round(lr_fraction, 12), round(domain_share, 12)


def distinct_points(rows: Iterable[TrialRow]) -> int:
    return len({point_key(row.lr_fraction, row.domain_share) for row in completed(rows)})


def fit_surrogate(rows: Iterable[TrialRow], space: SearchSpace) -> Surrogate | None:
    """GPs of domain_gain and forgetting over the completed rows (replicates included), or None with fewer
    than MIN_DISTINCT_POINTS distinct points."""
    rows = list(rows)
    used = sorted(completed(rows), key=lambda row: row.number)  # one order: one fit
    distinct = distinct_points(used)
    if distinct < MIN_DISTINCT_POINTS:
        return None
    censored = sorted(stopped(rows), key=lambda row: row.number)
    everything = used + censored
    box = Box.of(space)
    x = box.scaled([row.lr_fraction for row in everything], [row.domain_share for row in everything])
    is_censored = np.array([False] * len(used) + [True] * len(censored))
    bounds = [_bounds(row) for row in censored]
    gain_y = np.array([row.domain_gain for row in used] + [gain for gain, _ in bounds])
    forgetting_y = np.array([row.forgetting for row in used] + [forgetting for _, forgetting in bounds])
    gain, gain_fit = _fit_censored(x, gain_y, is_censored)
    forgetting, forgetting_fit = _fit_censored(x, forgetting_y, is_censored)
    gain_fit = gain_fit.model_copy(update={"text_sd": _pooled([row.gain_text_error for row in used])})
    forgetting_fit = forgetting_fit.model_copy(update={"text_sd": _pooled([row.forgetting_text_error for row in used])})
    fit = SurrogateFit(
        trials=sorted(row.number for row in everything),
        points=len(used),
        stopped=len(censored),
        distinct_points=distinct,
        domain_gain=gain_fit,
        forgetting=forgetting_fit,
    )
    return Surrogate(box=box, gain=gain, forgetting=forgetting, fit=fit)


@dataclass(frozen=True)
class MetricSurface:
    """A GP of one more metric over the same box as a Surrogate's (a downstream task's drop), fitted to the completed
    rows that measured it; stopped trials are not scored downstream, so there is nothing to censor."""

    box: Box
    gp: GaussianProcessRegressor
    fit: MetricFit

    def predict(self, lr_fraction: Sequence[float], domain_share: Sequence[float]) -> Predictions:
        return _predict(self.gp, self.box.scaled(lr_fraction, domain_share), self.fit)


def fit_metric(
    rows: Iterable[TrialRow], space: SearchSpace, value: Callable[[TrialRow], float | None],
    error: Callable[[TrialRow], float | None],
) -> MetricSurface | None:  # fmt: skip
    """The GP of `value` over the completed rows where it is finite (their `error`s pooled as its text_sd), or None
    with fewer than MIN_DISTINCT_POINTS distinct points among them."""
    used = [row for row in sorted(completed(rows), key=lambda row: row.number) if _finite([value(row)])]
    if distinct_points(used) < MIN_DISTINCT_POINTS:
        return None
    box = Box.of(space)
    x = box.scaled([row.lr_fraction for row in used], [row.domain_share for row in used])
    y = np.array([value(row) for row in used], dtype=float)
    gp, fit = _fit_censored(x, y, np.zeros(len(used), dtype=bool))
    return MetricSurface(box=box, gp=gp, fit=fit.model_copy(update={"text_sd": _pooled([error(row) for row in used])}))


def _pooled(errors: list[float | None]) -> float:
    """Root mean square of the standard errors measured (0 when none was): each trial's is the same pool seen by
    another model, so they are pooled as one noise level, not averaged down by their number."""
    measured = [error for error in errors if error is not None and math.isfinite(error)]
    return math.sqrt(math.fsum(error**2 for error in measured) / len(measured)) if measured else 0.0


def _fit_censored(x: np.ndarray, y: np.ndarray, censored: np.ndarray) -> tuple[GaussianProcessRegressor, MetricFit]:
    """The GP of one metric where y[censored] are lower bounds, by Schmee and Hahn's iterated conditional
    expectations (module docstring); the survivors' fit when nothing is censored.

    The hyper-parameters are learned twice: from the survivors, then once more (from there, no restarts) on the
    settled imputation; the rounds in between and after keep them fixed, each a single Cholesky, so the
    censored fit costs about twice the survivors' one rather than a full optimisation per round."""
    gp = _fit(x[~censored], y[~censored])
    if not censored.any():
        return gp, _metric_fit(gp, y[~censored])
    values, extra, gp = _impute(gp, x, y, censored)
    gp = _fit(x, values, extra_variance=extra, start=gp.kernel_)
    values, _, gp = _impute(gp, x, y, censored)
    return gp, _metric_fit(gp, values)


def _impute(
    gp: GaussianProcessRegressor, x: np.ndarray, bounds: np.ndarray, censored: np.ndarray
) -> tuple[np.ndarray, np.ndarray, GaussianProcessRegressor]:
    """Rounds of: each censored value <- the mean of the predictive normal truncated below at its bound, refit with
    the kernel held; until the values settle. Returns the values, their extra variance and the last fit."""
    values, extra = bounds.astype(float), np.zeros(len(bounds))
    spread = max(float(np.ptp(bounds)), 1e-12)
    for _ in range(CENSORED_ROUNDS):
        with _one_blas_thread():
            mean, sd = gp.predict(x[censored], return_std=True)  # of a measurement: noise included
        sd = np.maximum(sd, 1e-12)
        truncated = truncnorm((bounds[censored] - mean) / sd, np.inf, loc=mean, scale=sd)
        moved = float(np.max(np.abs(truncated.mean() - values[censored])))
        values[censored], extra[censored] = truncated.mean(), truncated.var()
        gp = _fit(x, values, extra_variance=extra, start=gp.kernel_, learn=False)
        if moved < SETTLED * spread:
            break
    return values, extra, gp


def _fit(
    x: np.ndarray,
    y: np.ndarray,
    *,
    extra_variance: np.ndarray | None = None,
    start: Kernel | None = None,
    learn: bool = True,
) -> GaussianProcessRegressor:
    """`extra_variance`: per row, variance beyond the learned noise (an imputed value's), in the metric's units.
    `start`: hyper-parameters to start from (then no random restarts); `learn=False` holds them."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    kernel = start or ConstantKernel(1.0, (1e-3, 1e3)) * Matern(
        length_scale=[0.5, 0.5], length_scale_bounds=LENGTH_SCALE_BOUNDS, nu=2.5
    ) + WhiteKernel(noise_level=0.1, noise_level_bounds=NOISE_BOUNDS)
    # alpha is added to the kernel's diagonal in normalize_y's units; 1e-10 is scikit-learn's default jitter.
    alpha = 1e-10 if extra_variance is None else extra_variance / _y_scale(y) ** 2 + 1e-10
    gp = GaussianProcessRegressor(
        kernel,
        alpha=alpha,
        normalize_y=True,
        optimizer="fmin_l_bfgs_b" if learn else None,
        n_restarts_optimizer=RESTARTS if start is None else 0,
        random_state=SEED,
    )
    with warnings.catch_warnings(), _one_blas_thread():
        # A length scale or the noise at its bound is an answer (flat along that axis; noiseless), not a failure.
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp.fit(x, y)
    return gp


def _metric_fit(gp: GaussianProcessRegressor, y: np.ndarray) -> MetricFit:
    """The learned hyper-parameters of `gp` fitted to `y`, in the metric's units."""
    scale = _y_scale(y)
    signal, noise = gp.kernel_.k1, gp.kernel_.k2
    length = np.broadcast_to(signal.k2.length_scale, (2,))
    return MetricFit(
        noise_sd=float(math.sqrt(noise.noise_level) * scale),
        signal_sd=float(math.sqrt(signal.k1.constant_value) * scale),
        length_scale_lr=float(length[0]),
        length_scale_mix=float(length[1]),
    )


def _predict(gp: GaussianProcessRegressor, x: np.ndarray, fit: MetricFit) -> Predictions:
    with _one_blas_thread():
        mean, sd = gp.predict(x, return_std=True)  # sd of a measurement: the white noise is on the kernel's diagonal
    surface = np.sqrt(np.maximum(sd**2 - fit.noise_sd**2, 0.0))
    return Predictions(mean=mean, sd=surface, noise_sd=fit.noise_sd, text_sd=fit.text_sd)


def _one_blas_thread() -> threadpool_limits:
    """Matrices of a few hundred rows gain nothing from more BLAS threads, and on a machine busy with
    trials OpenBLAS's waiting threads made a fit eight times slower (2 s instead of 0.25 s on 2 cores)."""
    return threadpool_limits(limits=1, user_api="blas")


def _y_scale(y: np.ndarray) -> float:
    """The standard deviation normalize_y divides by (scikit-learn takes a constant target's as 1)."""
    std = float(np.std(y))
    return std if std >= 10 * np.finfo(float).eps else 1.0
