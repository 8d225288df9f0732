"""Fitting the law to a table of evaluations: per loss, scipy's robust (Huber) least squares from several starts.

As D-CPT Law fits its parameters (arXiv:2406.01375: a Huber loss, because a few odd evaluations, such as a trial's
last one before it diverged, must not pull the law) but with `scipy.optimize.least_squares(loss="huber")` and
bounds instead of L-BFGS on the Huber sum: the same objective, with a trust-region solver that respects the
bounds. The surface has several optima (an exponent traded against an offset), so each fit starts from a Latin
hypercube of starting points over the nonlinear parameters, each with the two linear ones (P, B) solved exactly by
least squares for it, and keeps the lowest cost.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import least_squares
from scipy.stats import qmc
from threadpoolctl import threadpool_limits

from sweep.law.config import LawSettings
from sweep.law.curve import LEVEL_BOUND, SizeCurve
from sweep.law.forms import FORMS, LINEAR, Coordinate, Form, FormName, Inputs
from sweep.law.model import FitQuality, Law, Loss, LossLaw, References, RungResiduals, Spans
from sweep.law.table import ObservationTable

TOLERANCE = 1e-6
"""least_squares' relative tolerance on the cost and the step: the starts that reach the best optimum agree on the
cost to 1e-6 of it, and tighter tolerances took three times the steps to move the fourth digit of the law's
coefficients."""
SCREENING_EVALUATIONS = 60
"""Each start first runs this many evaluations; only the POLISHED best then run to convergence. Half the starts
need 100-700 evaluations to converge from a far start, and after 60 the best of 16 is already the basin of the
optimum (on the synthetic laws of the tests); a full run of every start took five times as long."""
POLISHED = 2
"""Screened starts run on to convergence, best first: the best screened one is not always the best converged."""
POLISH_EVALUATIONS = 400
"""At most this many evaluations polish a start: a converging polish takes 20-200, and a start that wanders along a
flat valley for thousands (seen on 2,000-row tables) would hold the whole fit up for the last digits of a cost."""
BASIN = 1.10
"""A start whose screened cost came within 10 % of the best polished cost found the optimum's basin: screened
starts there lie 0.5-4 % above it, those in other basins 50-80 %."""


class LawFitError(ValueError):
    """No start of a fit reached a finite cost."""


def one_blas_thread() -> threadpool_limits:
    """The law's least squares on one BLAS thread: its Jacobians are a few thousand rows by a dozen columns, whose
    SVD (scipy's trust-region solver takes one per step) gains nothing from threads, and on 2 busy cores OpenBLAS's
    second thread made 1,632 rows' fit 2.6 times slower (the SVDs alone 17 times: 31 s against 1.8 s)."""
    return threadpool_limits(limits=1, user_api="blas")


def spans_of(table: ObservationTable) -> Spans:
    def varies(values: np.ndarray) -> bool:
        return bool(np.ptp(values) > 1e-9 * max(1.0, float(np.max(np.abs(values)))))

    return Spans(
        parameters=varies(table.parameters),
        lr_area=varies(table.lr_area),
        lr_fraction=varies(table.lr_fraction),
        time=varies(table.time),
        domain_share=varies(table.domain_share),
    )


def references_of(table: ObservationTable) -> References:
    def mean(values: np.ndarray) -> float:
        return float(np.exp(np.mean(np.log(values))))

    return References(parameters=mean(table.parameters), lr_fraction=mean(table.lr_fraction), time=mean(table.time))


def fit_law(
    table: ObservationTable,
    settings: LawSettings,
    *,
    form: FormName = "dcpt-area",
    warm: Law | None = None,
    starts: int | None = None,
) -> Law:
    """Both losses' laws in `form` fitted to `table`; `warm` (a law of the same form) adds its parameters as one more
    start and lends its references (a bootstrap refit, a fold)."""
    fitted = {
        loss: fit_loss_law(
            table, loss, settings, form=form, warm=getattr(warm, loss.value) if warm else None, starts=starts
        )
        for loss in Loss
    }
    (general, general_quality), (domain, domain_quality) = fitted[Loss.GENERAL], fitted[Loss.DOMAIN]
    return Law(
        general=general,
        domain=domain,
        general_quality=general_quality,
        domain_quality=domain_quality,
        rows=len(table),
        trials=table.trials,
        rungs=table.rungs,
    )


def fit_loss_law(
    table: ObservationTable,
    loss: Loss,
    settings: LawSettings,
    *,
    form: FormName = "dcpt-area",
    fixed: Mapping[str, float] | None = None,
    warm: LossLaw | None = None,
    starts: int | None = None,
) -> tuple[LossLaw, FitQuality]:
    """One loss's law: the Huber fit from `starts` (default settings.starts) Latin-hypercube starts, plus `warm`'s
    parameters when given. `fixed` pins parameters by name (the CMR check pins P = 0: no shift without domain
    data). LawFitError when no start reaches a finite cost."""
    # A refit keeps the full fit's references, so that its start is exactly the full fit's law.
    references = warm.references if warm is not None else references_of(table)
    problem = _Problem.of(table, loss, FORMS[form], dict(fixed or {}), references)
    count = settings.starts if starts is None else starts
    points = problem.starts(count, settings.seed)
    if warm is not None:
        points = [problem.encode(warm)] + points[: max(0, count - 1)]
    screened = [problem.solve(point, settings.huber_scale, SCREENING_EVALUATIONS) for point in points]
    finite = sorted((result for result in screened if np.isfinite(result.cost)), key=_cost)
    if not finite:
        raise LawFitError(f"no start of the {loss.value} loss's fit reached a finite cost ({len(screened)} starts)")
    # A refit starts from the full fit's parameters, the basin of its optimum: its best start alone is polished.
    polished = finite[: 1 if warm is not None else POLISHED]
    best = min((problem.solve(result.x, settings.huber_scale, POLISH_EVALUATIONS) for result in polished), key=_cost)
    law = problem.decode(best.x)
    agreeing = sum(result.cost <= best.cost * BASIN + 1e-15 for result in finite)
    return law, problem.quality(best.x, best.cost, agreeing)


def _cost(solution: _Solution) -> float:
    return solution.cost


@dataclass(frozen=True)
class _Problem:
    """One loss's least-squares problem in one form: the rows as the arrays the form takes, and which parameters
    are free. A curve form (size-curve) has one more parameter per model size after the first: that size's level."""

    loss: Loss
    form: Form
    inputs: Inputs
    change: np.ndarray
    rung: np.ndarray
    spans: Spans
    fixed: np.ndarray
    """Every parameter's value, in the form's order and then the curve's levels; a point overwrites the free ones."""
    free: tuple[int, ...]
    references: References
    sizes: tuple[float, ...] = ()
    """log10 N of each model size, ascending, for a curve form (its knots)."""
    knot: np.ndarray | None = None
    """Each row's knot, for a curve form."""

    @classmethod
    def of(
        cls, table: ObservationTable, loss: Loss, form: Form, fixed: dict[str, float], references: References
    ) -> _Problem:
        spans = spans_of(table)
        values, free = [], []
        for index, coordinate in enumerate(form.coordinates):
            values.append(fixed.get(coordinate.name, coordinate.value_without))
            undetermined = coordinate.fixed_without is not None and not getattr(spans, coordinate.fixed_without)
            if coordinate.name not in fixed and not undetermined:
                free.append(index)
        sizes, knot = (), None
        if form.curve:
            distinct, knot = np.unique(np.log10(table.parameters), return_inverse=True)
            sizes = tuple(float(size) for size in distinct)
            free += list(range(len(values), len(values) + len(sizes) - 1))
            values += [0.0] * (len(sizes) - 1)
        inputs = Inputs(
            size=table.parameters / references.parameters,
            lr=table.lr_fraction / references.lr_fraction,
            time=table.time / references.time,
            own=loss.own_share(table.domain_share),
            without=loss.share_without_domain,
            area_known=spans.lr_area,
        )
        return cls(
            loss=loss,
            form=form,
            inputs=inputs,
            change=table.forgetting if loss is Loss.GENERAL else -table.domain_gain,
            rung=table.rung,
            spans=spans,
            fixed=np.array(values, dtype=float),
            free=tuple(free),
            references=references,
            sizes=sizes,
            knot=knot,
        )

    @property
    def all_coordinates(self) -> tuple[Coordinate, ...]:
        """The form's coordinates, then a curve's levels (sizes after the first)."""
        levels = tuple(
            Coordinate(f"level_{k}", -LEVEL_BOUND, LEVEL_BOUND, False, None, 0.0) for k in range(1, len(self.sizes))
        )
        return self.form.coordinates + levels

    @property
    def coordinates(self) -> list[Coordinate]:
        every = self.all_coordinates
        return [every[i] for i in self.free]

    @functools.cached_property
    def _free_index(self) -> np.ndarray:
        return np.array(self.free, dtype=int)

    @functools.cached_property
    def _fitted_on_log(self) -> np.ndarray:
        """Whether each free coordinate is fitted on its log: the solver calls values() and jacobian() thousands of
        times a fit, and rebuilding this per call took a tenth of the fit's time."""
        return np.array([c.log for c in self.coordinates], dtype=bool)

    def values(self, point: np.ndarray) -> np.ndarray:
        values = self.fixed.copy()
        values[self._free_index] = np.where(self._fitted_on_log, np.exp(point), point)
        return values

    def decode(self, point: np.ndarray) -> LossLaw:
        # exp(log(bound)) may land a rounding error outside the bound the law's record checks
        low, high = zip(*((c.low, c.high) for c in self.all_coordinates))
        values = np.clip(self.values(point), low, high)
        count = len(self.form.coordinates)
        curve = (
            SizeCurve(sizes=list(self.sizes), levels=[0.0, *map(float, values[count:])]) if self.form.curve else None
        )
        return LossLaw(
            loss=self.loss,
            form=self.form.name,
            values={name: float(value) for name, value in zip(self.form.parameters, values[:count])},
            references=self.references,
            spans=self.spans,
            curve=curve,
        )

    def encode(self, law: LossLaw) -> np.ndarray:
        values = dict(law.values)
        if self.form.curve:
            # the warm law's curve at this table's sizes, relative to its first: P and B carry the first's factor
            levels = law.curve.posterior(np.array(self.sizes))[0] if law.curve is not None else np.zeros(1)
            values["offset"] *= float(np.exp(levels[0]))
            values["shift"] *= float(np.exp(levels[0]))
            values |= {f"level_{k}": float(levels[k] - levels[0]) for k in range(1, len(self.sizes))}
        point = [values[c.name] for c in self.coordinates]
        return self._inside(np.array([np.log(v) if c.log else v for c, v in zip(self.coordinates, point)], dtype=float))

    def _inside(self, point: np.ndarray) -> np.ndarray:
        low, high = self.bounds
        return np.clip(point, low + 1e-9 * (high - low), high - 1e-9 * (high - low))

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        low = [np.log(c.low) if c.log else c.low for c in self.coordinates]
        high = [np.log(c.high) if c.log else c.high for c in self.coordinates]
        return np.array(low, dtype=float), np.array(high, dtype=float)

    def residuals(self, point: np.ndarray) -> np.ndarray:
        residuals = self.fitted(self.values(point)) - self.change
        # An overflow at a bound is a bad point, not a crash: a large finite residual steers the solver away.
        return np.where(np.isfinite(residuals), residuals, 1e6)

    def jacobian(self, point: np.ndarray) -> np.ndarray:
        """d residual / d free coordinate: the form's gradient, times the value for a coordinate fitted on its log."""
        values = self.values(point)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            gradient = self.form.gradient(*self._form_values(values))
            if self.form.curve:
                fitted = self.fitted(values)
                gradient = np.column_stack(
                    [gradient, *(np.where(self.knot == k, fitted, 0.0) for k in range(1, len(self.sizes)))]
                )
        free = self._free_index
        jacobian = gradient[:, free] * np.where(self._fitted_on_log, values[free], 1.0)
        return np.where(np.isfinite(jacobian), jacobian, 0.0)

    def fitted(self, values: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return self.form.change(*self._form_values(values))

    def _form_values(self, values: np.ndarray) -> tuple[np.ndarray, Inputs]:
        """The form's own parameters, and the inputs with each row's level for a curve form."""
        count = len(self.form.coordinates)
        if not self.form.curve:
            return values, self.inputs
        levels = np.concatenate([[0.0], values[count:]])
        return values[:count], replace(self.inputs, level=levels[self.knot])

    def starts(self, count: int, seed: int) -> list[np.ndarray]:
        """`count` Latin-hypercube points over the free nonlinear parameters, each with P and B solved for; a curve's
        levels start at 0, a size-free law (the solver moves them: each is one scale factor of its size's rows)."""
        nonlinear = [
            i for i, c in enumerate(self.coordinates) if c.name not in LINEAR and not c.name.startswith("level_")
        ]
        low, high = self.bounds
        unit = qmc.LatinHypercube(d=max(1, len(nonlinear)), seed=seed).random(count)
        points = []
        for row in unit:
            point = np.where([c.name.startswith("level_") for c in self.coordinates], 0.0, (low + high) / 2.0)
            point[nonlinear] = low[nonlinear] + row[: len(nonlinear)] * (high[nonlinear] - low[nonlinear])
            points.append(self._with_linear_solved(point))
        return points

    def _with_linear_solved(self, point: np.ndarray) -> np.ndarray:
        """P and B (where free) by ordinary least squares at the point's nonlinear parameters: the form is linear
        in them, so a start is only as far off as its exponents."""
        linear = [i for i, c in enumerate(self.coordinates) if c.name in LINEAR]
        if not linear:
            return point
        rest = self._fitted(point, {i: 0.0 for i in linear})
        columns = [self._fitted(point, {j: float(j == i) for j in linear}) - rest for i in linear]
        design = np.column_stack(columns)
        if np.all(np.isfinite(design)) and np.all(np.isfinite(rest)):
            point = point.copy()
            point[linear], *_ = np.linalg.lstsq(design, self.change - rest, rcond=None)
        return self._inside(point)

    def _fitted(self, point: np.ndarray, overrides: dict[int, float]) -> np.ndarray:
        changed = point.copy()
        for index, value in overrides.items():
            changed[index] = value
        return self.residuals(changed) + self.change

    def solve(self, start: np.ndarray, huber_scale: float, evaluations: int | None) -> _Solution:
        low, high = self.bounds
        result = least_squares(
            self.residuals,
            start,
            jac=self.jacobian,
            bounds=(low, high),
            loss="huber",
            f_scale=huber_scale,
            x_scale="jac",
            ftol=TOLERANCE,
            xtol=TOLERANCE,
            max_nfev=evaluations,
        )
        return _Solution(result.x, float(result.cost) if np.isfinite(result.cost) else np.inf)

    def quality(self, point: np.ndarray, cost: float, agreeing: int) -> FitQuality:
        residuals = self.change - self.fitted(self.values(point))
        total = float(np.sum((self.change - np.mean(self.change)) ** 2))
        r2 = 1.0 - float(np.sum(residuals**2)) / total if total > 0 else 0.0
        return FitQuality(
            rows=len(self.change),
            r2=r2,
            huber=cost / len(self.change),
            starts_agreeing=max(1, agreeing),
            rungs=rung_residuals(self.rung, residuals),
        )


def rung_residuals(rung: np.ndarray, residuals: np.ndarray) -> list[RungResiduals]:
    """Each rung's mean and RMS residual (measured minus fitted), in the order the rungs first appear."""
    rungs = []
    for name in dict.fromkeys(rung.tolist()):
        mine = residuals[rung == name]
        rms = float(np.sqrt(np.mean(mine**2)))
        rungs.append(RungResiduals(rung=str(name), rows=len(mine), mean=float(np.mean(mine)), rms=rms))
    return rungs


@dataclass(frozen=True)
class _Solution:
    x: np.ndarray
    cost: float
