"""The form's own error, beyond the replicates' noise: how far the answer's law misses the rungs it was fitted to and
the rungs it was not, and how that error grows with the distance in log N from the rungs to a target.

No closed form holds a team's runs to their noise, so the law carries its misfit as a model-discrepancy term
(Kennedy and O'Hagan, "Bayesian calibration of computer models", J. R. Statist. Soc. B 63(3), 2001): a relative error
of each loss, exp(e) times the law, with e of standard deviation

    sd(d, N) = sqrt(within^2 + (growth x d)^2 + (1 - w) x bend(N)^2),

d the decades of N from the target to the nearest rung. `within` is the error at the rungs themselves (the residual
beyond the noise, as a share of the law's values there; beyond the noise's upper confidence bound, sweep.law.noise's
Noise.upper, as a noise pooled over a few replicated points is itself known to about 1 / sqrt(2 nu), and a residual
within that is the estimate's shortfall, not the form's: rows drawn from a fitted form carried 0.0074 of forgetting
against the point estimate); `growth` is how much more a rung predicted from the others
is missed, per decade it lies beyond them (the smallest and the largest rung held out in turn: those the others
reach by extrapolation, as they reach the target); `bend` is how far the rungs' own levels, fitted one per size by
the form that bends (size-curve), may lie off the power forms' line by N: the root mean square of that departure
under the curve's Gaussian process (sweep.law.curve), sqrt((mean - line)^2 + sd^2), the curve's mean departure from
the power forms' own power of N there and its sd, both zero at the rungs of a power law and growing with the
curvature the rungs show, counted for the share 1 - w of the answer whose N-dependence is a power (w the size-curve
form's weight, whose refits draw their bend themselves). The sd alone would leave out where the curve says the
levels are going: rungs that level off put the curve's mean a decade or two out well above the power forms' line,
by more than its sd (tests/sweep/law/law_truths.py's bending size: 0.95 against an sd of 0.74 in log forgetting). What
the levels' own estimation error makes of the curve is taken out in variance, as the noise is from `within`: the
square of the departure less that of BEYOND of the sds that error gives it, the amplitude's square less that of its
90 % bound (a between-study variance's moment estimate, DerSimonian and Laird, "Meta-analysis in clinical trials",
Controlled Clinical Trials 7(3), 1986, at the noise's upper bound). law_truths' replay-area has flat domain_gain
levels, off a line by their noise alone, whose curve put 0.085 of departure on the gain two decades out, 0.106
carried before any discount, none with it; a real bend keeps nearly all of itself (taking BEYOND sds off the
departure instead, not their square, kept 1.06 of bending size's 1.20 and let 3 of its 9 draws promote past the
budget, BENCHMARKS.md's appendix). All are
read off the fitted forms and the rows, so a law that holds the rungs to their noise and a power of N carries
none, and one that misses them carries what it misses, growing as far as the held-out rungs and the levels say.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field
from scipy.stats import norm

from sweep.law.curve import SizeCurve
from sweep.law.noise import BOUND, Noise
from sweep.law.table import ObservationTable
from train_entry.config import StrictConfig

MIN_SPAN = 0.5
"""Decades of N the rungs must span (a factor 3.2) before the law says how the losses move with N: closer sizes
differ by less than their noise tells apart."""
MIN_SIZES = 3
"""Model sizes needed to measure how the error grows: a rung held out leaves two others to extrapolate from."""
BEYOND = float(norm.ppf(BOUND))
"""The levels' own estimation error is taken out of a curve's departure from the power forms' line at this many of
the sds it gives it (1.28: the noise's upper bound's confidence, one-sided)."""
STEP = 0.5
"""Decades between the nearest rung and a rung suggested toward the target: the ladders' own spacing."""


class RungError(StrictConfig):
    """One rung's relative error beyond the noise, in one loss."""

    rung: str
    parameters: float = Field(gt=0.0)
    fitted: float = Field(ge=0.0)
    """The law fitted to every rung, on this rung's rows."""
    held_out: float | None = Field(None, ge=0.0)
    """The law fitted without this rung, predicting its rows; None when it was not held out (or its fit failed)."""
    distance: float | None = Field(None, ge=0.0)
    """Decades of N from this rung to the nearest other one, when it lies beyond them all (the smallest or the
    largest): the held-out error it measures is an extrapolation's."""


class LossDiscrepancy(StrictConfig):
    """The relative error of one loss's law, and its growth with the distance from the rungs."""

    loss: Literal["forgetting", "domain_gain"]
    within: float = Field(ge=0.0)
    """Relative sd at the rungs: sqrt(max(0, mean residual^2 - noise^2) / mean fitted^2) over every row, the noise
    its upper confidence bound (Noise.upper)."""
    growth: float | None = Field(None, ge=0.0)
    """Relative sd added per decade beyond the rungs: the extrapolated rungs' held-out error in excess of `within`,
    over their distance (root mean square); None with too few sizes or no extrapolated fold that fitted."""
    rungs: list[RungError]
    curve: SizeCurve | None = None
    """The size-curve form's fitted levels of this loss (None: it did not fit)."""
    power_share: float = Field(1.0, ge=0.0, le=1.0)
    """The share of the answer whose N-dependence is a power: 1 less the size-curve form's weight."""
    level_errors: list[float] | None = Field(None, max_length=1000)
    """The sd of each of the curve's levels that the rows' noise alone makes (one per size; None: not known, none
    discounted): a departure from the line, or a bend, that the levels' own estimation error explains is not counted."""
    power_slope: float | None = Field(None, ge=-10.0, le=10.0)
    """The power forms' log size factor per decade of N (-ln 10 x their size exponent, weighted as the answer weighs
    them): the line the curve's levels are measured against. None: no power form in the answer."""

    def bend(self, parameters: float) -> float:
        """The root mean square, under the size curve, of how far the rungs' levels lie off the power forms' line by
        `parameters` (the curve's mean departure from it and its sd), for the power forms' share of the answer."""
        if self.curve is None:
            return 0.0
        here, start = math.log10(parameters), self.curve.sizes[0]
        mean, sd = self.curve.posterior(np.array([start, here]))
        departure = 0.0 if self.power_slope is None else float(mean[1] - mean[0]) - self.power_slope * (here - start)
        spread = float(sd[1])
        if self.level_errors is not None:
            change, noisy = self.curve.noise(start, here, self.level_errors, BOUND)
            departure = math.sqrt(max(0.0, departure**2 - (BEYOND * change) ** 2))
            spread = math.sqrt(max(0.0, spread**2 - noisy**2))
        return math.sqrt(self.power_share) * math.hypot(departure, spread)

    def sd(self, decades: float, parameters: float, bend_scale: float = 1.0) -> float | None:
        """The relative sd at `parameters`, `decades` of N from the nearest rung, the bend's term times
        `bend_scale` (a rung nearer the target would shorten how far the levels are carried); None when the growth
        is unknown and the point lies beyond the rungs."""
        if decades > 0.0 and self.growth is None:
            return None
        grown = (self.growth or 0.0) * decades
        return math.sqrt(self.within**2 + grown**2 + (bend_scale * self.bend(parameters)) ** 2)


class Discrepancy(StrictConfig):
    """The stacked law's error in both losses, with the sizes it was measured at."""

    forgetting: LossDiscrepancy
    domain_gain: LossDiscrepancy
    sizes: list[float] = Field(min_length=1)
    """log10 N of the rungs' sizes, ascending."""

    @property
    def span(self) -> float:
        """Decades of N the rungs span."""
        return self.sizes[-1] - self.sizes[0]

    def distance(self, parameters: float) -> float:
        """Decades of N from `parameters` to the nearest rung's size."""
        return min(abs(math.log10(parameters) - size) for size in self.sizes)

    def toward(self, parameters: float, decades: float) -> float:
        """N of a rung `decades` from the nearest one toward `parameters` (at most reaching it)."""
        here = math.log10(parameters)
        nearest = min(self.sizes, key=lambda size: abs(here - size))
        step = min(decades, abs(here - nearest))
        return 10.0 ** (nearest + math.copysign(step, here - nearest))

    def growth_known(self) -> bool:
        return self.forgetting.growth is not None and self.domain_gain.growth is not None


def discrepancy_of(
    table: ObservationTable,
    noise: Noise,
    fitted: tuple[np.ndarray, np.ndarray],
    held_out: tuple[np.ndarray, np.ndarray],
    curves: tuple[SizeCurve | None, SizeCurve | None] = (None, None),
    power_share: float = 1.0,
    power_slopes: tuple[float | None, float | None] = (None, None),
) -> Discrepancy:
    """The discrepancy of a law whose values at the table's rows are `fitted` (forgetting, domain_gain) and whose
    rung-held-out predictions of them are `held_out` (NaN where a rung was not held out or its fit failed), with
    the size-curve form's `curves` of each loss, the answer's `power_share` and its power forms' `power_slopes`."""
    sizes = sorted({math.log10(table.rung_parameters(rung)) for rung in table.rungs})
    measured = (table.forgetting, table.domain_gain)
    spreads = noise.upper()
    losses = []
    for name, values, fit, out, spread, curve, slope in zip(
        ("forgetting", "domain_gain"), measured, fitted, held_out, spreads, curves, power_slopes
    ):
        loss = _loss(table, name, values, fit, out, spread, sizes)
        errors = None if curve is None else _level_errors(table, fit, spread, curve.sizes)
        update = {"curve": curve, "power_share": power_share, "power_slope": slope, "level_errors": errors}
        losses.append(loss.model_copy(update=update))
    return Discrepancy(forgetting=losses[0], domain_gain=losses[1], sizes=sizes)


def _loss(
    table: ObservationTable,
    name: str,
    measured: np.ndarray,
    fitted: np.ndarray,
    held_out: np.ndarray,
    noise: float,
    sizes: list[float],
) -> LossDiscrepancy:
    within = _relative(measured - fitted, fitted, noise)
    rungs, excess = [], []
    for rung in table.rungs:
        mine = table.rung == rung
        parameters = table.rung_parameters(rung)
        out = held_out[mine]
        known = np.isfinite(out)
        held = _relative(measured[mine][known] - out[known], out[known], noise) if np.all(known) and len(out) else None
        distance = _beyond(math.log10(parameters), sizes) if len(sizes) >= MIN_SIZES else None
        rungs.append(
            RungError(
                rung=rung,
                parameters=parameters,
                fitted=_relative(measured[mine] - fitted[mine], fitted[mine], noise),
                held_out=held,
                distance=distance,
            )
        )
        if held is not None and distance:
            excess.append(max(0.0, held**2 - within**2) / distance**2)
    growth = math.sqrt(float(np.mean(excess))) if excess else None
    return LossDiscrepancy(loss=name, within=within, growth=growth, rungs=rungs)


def _level_errors(table: ObservationTable, fitted: np.ndarray, noise: float, sizes: list[float]) -> list[float]:
    """The sd the rows' noise alone gives each size's level g (a log size factor, so each row measures exp(g) to a
    relative noise / value): noise / sqrt(sum of the values^2 over its rows), the Fisher information of a level the
    rows' other parameters do not share; a lower bound on its error, so the discount errs toward carrying a bend."""
    at = np.log10(table.parameters)
    errors = []
    for size in sizes:
        information = float(np.sum(fitted[np.isclose(at, size)] ** 2))
        errors.append(noise / math.sqrt(information) if information > 0.0 else 0.0)
    return errors


def _relative(residual: np.ndarray, values: np.ndarray, noise: float) -> float:
    """sqrt(max(0, mean residual^2 - noise^2) / mean value^2): the residual the replicates cannot explain, as a share
    of the values it is a residual of."""
    scale = float(np.mean(values**2))
    if not len(residual) or scale <= 0.0:
        return 0.0
    return math.sqrt(max(0.0, float(np.mean(residual**2)) - noise**2) / scale)


def _beyond(size: float, sizes: list[float]) -> float | None:
    """Decades from `size` to the nearest other size when it lies beyond all of them, else None."""
    others = [other for other in sizes if other != size]
    if not others or min(others) < size < max(others):
        return None
    return min(abs(size - other) for other in others)
