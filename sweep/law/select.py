"""Which form to believe: every form of sweep.law.forms fitted to the same rows, compared on rows it was not
fitted to (each rung held out in turn, and each fold of trials within the rungs), and weighted by stacking their
out-of-fold predictions (Breiman's stacked regression: non-negative least squares, `scipy.optimize.nnls`, the
weights then summing to one). The answer is the weighted average of the credible forms, and its intervals draw
refits from each in proportion to its weight, so that they hold the spread between the forms as well as the noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from pydantic import Field
from scipy.optimize import nnls

from sweep.law.config import LawSettings
from sweep.law.discrepancy import Discrepancy, discrepancy_of
from sweep.law.fit import LawFitError, fit_law, one_blas_thread
from sweep.law.forms import FORM_NAMES, FormName
from sweep.law.model import Law, LossLaw, Values
from sweep.law.noise import Misfit, Noise, misfit, replicate_noise
from sweep.law.table import LawInputError, ObservationTable
from train_entry.config import StrictConfig

TRIAL_FOLDS = 5
"""Folds of trials within the rungs: each trial is held out once, with a fifth of its rung's trials."""
CREDIBLE = 0.05
"""A form weighted below this is shown but draws no refits: 10 of 200 refits would say nothing of its spread."""
MIN_CV_RUNGS = 3
"""Holding a rung out leaves a law over N only with two other sizes."""

Progress = Callable[[str], None]


class FormScore(StrictConfig):
    """A form's error on rows it was not fitted to, in relative change (forgetting, domain_gain)."""

    rung_rmse: tuple[float, float] | None
    """Each rung predicted from the others; None with fewer than MIN_CV_RUNGS rungs or when no fold fitted."""
    trial_rmse: tuple[float, float] | None
    """Each fold of trials predicted from the other trials."""


class FormFit(StrictConfig):
    form: FormName
    law: Law
    score: FormScore
    weight: float = Field(ge=0.0, le=1.0)
    """Its stacking weight: the share of the answer and of the refits it carries."""
    misfit: Misfit

    @property
    def credible(self) -> bool:
        return self.weight >= CREDIBLE


class Laws(StrictConfig):
    """Every form fitted to one table, weighted by how well each predicted rows it was not fitted to."""

    forms: list[FormFit] = Field(min_length=1)
    noise: Noise
    discrepancy: Discrepancy
    """The stacked law's error beyond the noise, at the rungs and predicting each from the others."""
    rows: int = Field(ge=1)
    trials: int = Field(ge=1)
    rungs: list[str]

    @property
    def best(self) -> FormFit:
        """The best-validated form: the largest weight."""
        return max(self.forms, key=lambda fit: fit.weight)

    @property
    def credible(self) -> list[FormFit]:
        return [fit for fit in self.forms if fit.credible] or [self.best]

    def stacked(self) -> StackedLaw:
        credible = self.credible
        total = sum(fit.weight for fit in credible) or 1.0
        return StackedLaw([fit.law for fit in credible], [fit.weight / total for fit in credible])


@dataclass(frozen=True)
class StackedLaw:
    """The credible forms' laws averaged with their weights: the answer's predicted mean."""

    laws: Sequence[Law]
    weights: Sequence[float]

    def forgetting(self, parameters: Values, lr_fraction: Values, time: Values, domain_share: Values) -> np.ndarray:
        return sum(w * law.forgetting(parameters, lr_fraction, time, domain_share) for law, w in self._terms())

    def domain_gain(self, parameters: Values, lr_fraction: Values, time: Values, domain_share: Values) -> np.ndarray:
        return sum(w * law.domain_gain(parameters, lr_fraction, time, domain_share) for law, w in self._terms())

    def _terms(self):
        return zip(self.laws, self.weights)


def fit_forms(
    table: ObservationTable,
    settings: LawSettings,
    *,
    forms: Sequence[FormName] = FORM_NAMES,
    progress: Progress | None = None,
) -> Laws:
    """Every form in `forms` fitted to `table`, cross-validated and weighted; LawFitError when none fits."""
    with one_blas_thread():
        return _fit_forms(table, settings, forms, progress)


def _fit_forms(
    table: ObservationTable, settings: LawSettings, forms: Sequence[FormName], progress: Progress | None
) -> Laws:
    noise = replicate_noise(table, settings.huber_scale)
    folds = _folds(table, settings.seed)
    workers = min(settings.processes(len(table)), len(forms))
    if progress is not None:
        progress(f"fitting {len(forms)} forms, each cross-validated over {len(folds)} folds of rungs and trials")
    jobs = Parallel(n_jobs=workers, return_as="generator")(
        delayed(_fit_and_validate)(table, settings, form, folds) for form in forms
    )
    laws: dict[FormName, Law] = {}
    predictions = {}
    for form, done in zip(forms, jobs):
        if done is not None:
            laws[form], predictions[form] = done
        if progress is not None:
            progress(f"form {form}: {'fitted and cross-validated' if done is not None else 'no finite cost'}")
    if not laws:
        raise LawFitError(f"no form of the law reached a finite cost ({', '.join(forms)})")
    weights = _stack(table, noise, predictions)
    fits = [
        FormFit(
            form=form,
            law=law,
            score=_score(table, predictions[form]),
            weight=weights[form],
            misfit=misfit(law.general_quality, law.domain_quality, noise),
        )
        for form, law in laws.items()
    ]
    return Laws(
        forms=fits,
        noise=noise,
        discrepancy=_discrepancy(table, noise, fits, predictions),
        rows=len(table),
        trials=table.trials,
        rungs=table.rungs,
    )


def _discrepancy(
    table: ObservationTable, noise: Noise, fits: list[FormFit], predictions: dict[FormName, dict[str, np.ndarray]]
) -> Discrepancy:
    """The error of the answer's law (the credible forms weighted as Laws.stacked weights them) beyond the noise, at
    the rows and predicting each rung from the others."""
    credible = [fit for fit in fits if fit.credible] or [max(fits, key=lambda fit: fit.weight)]
    total = sum(fit.weight for fit in credible) or 1.0
    where = (table.parameters, table.lr_fraction, table.time, table.domain_share)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        fitted = (
            sum(fit.weight / total * fit.law.forgetting(*where) for fit in credible),
            sum(fit.weight / total * fit.law.domain_gain(*where) for fit in credible),
        )
    held_out = tuple(
        sum(fit.weight / total * predictions[fit.form][key] for fit in credible) for key in ("rung_f", "rung_g")
    )
    curve = next((fit for fit in fits if fit.law.general.curve is not None), None)
    if curve is None:
        return discrepancy_of(table, noise, fitted, held_out)
    bent = next((fit.weight / total for fit in credible if fit is curve), 0.0)
    curves = (curve.law.general.curve, curve.law.domain.curve)
    powers = [fit for fit in credible if fit is not curve]
    slopes = (
        _power_slope([(fit.law.general, fit.weight) for fit in powers]),
        _power_slope([(fit.law.domain, fit.weight) for fit in powers]),
    )
    return discrepancy_of(table, noise, fitted, held_out, curves, power_share=1.0 - bent, power_slopes=slopes)


def _power_slope(laws: list[tuple[LossLaw, float]]) -> float | None:
    """The weighted power forms' log size factor per decade of N, -ln 10 x their size exponent (None: none)."""
    total = sum(weight for _, weight in laws)
    if not laws or total <= 0.0:
        return None
    return -math.log(10.0) * sum(weight * law.values["size_exponent"] for law, weight in laws) / total


@dataclass(frozen=True)
class _Fold:
    kind: str
    """"rung" or "trial"."""
    held_out: np.ndarray


def _folds(table: ObservationTable, seed: int) -> list[_Fold]:
    """Each rung (with MIN_CV_RUNGS or more sizes), then TRIAL_FOLDS folds of trials, each rung's trials dealt to
    the folds in a seeded random order."""
    folds = []
    if len(set(table.parameters.tolist())) >= MIN_CV_RUNGS:
        folds += [_Fold("rung", table.rung == rung) for rung in table.rungs]
    rng = np.random.default_rng(seed)
    fold_of = np.zeros(len(table), dtype=int)
    for trials in table.trials_by_rung.values():
        for position, trial in enumerate(rng.permutation(len(trials))):
            fold_of[trials[trial]] = position % TRIAL_FOLDS
    folds += [_Fold("trial", fold_of == k) for k in range(TRIAL_FOLDS) if np.any(fold_of == k)]
    return [fold for fold in folds if 0 < np.sum(fold.held_out) < len(table)]


def _fit_and_validate(
    table: ObservationTable, settings: LawSettings, form: FormName, folds: list[_Fold]
) -> tuple[Law, dict[str, np.ndarray]] | None:
    """One form's fit and its out-of-fold predictions (None: no start reached a finite cost), on one BLAS thread in
    whichever process fits it: the forms are independent, so a large table's go to the workers the refits use."""
    with one_blas_thread():
        try:
            law = fit_law(table, settings, form=form)
        except LawFitError:
            return None
        return law, _out_of_fold(table, law, settings, folds)


def _out_of_fold(table: ObservationTable, law: Law, settings: LawSettings, folds: list[_Fold]) -> dict[str, np.ndarray]:
    """Each row's forgetting and domain_gain predicted by the law fitted without its fold, by kind of fold (NaN where
    the fold's fit failed)."""
    out = {f"{kind}_{name}": np.full(len(table), np.nan) for kind in ("rung", "trial") for name in ("f", "g")}
    for fold in folds:
        try:
            fitted = fit_law(
                table.select(~fold.held_out), settings, form=law.form, warm=law, starts=settings.refit_starts
            )
        except (LawFitError, LawInputError):
            continue
        rows = fold.held_out
        where = (table.parameters[rows], table.lr_fraction[rows], table.time[rows], table.domain_share[rows])
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            out[f"{fold.kind}_f"][rows] = fitted.forgetting(*where)
            out[f"{fold.kind}_g"][rows] = fitted.domain_gain(*where)
    return out


def _stack(
    table: ObservationTable, noise: Noise, predictions: dict[FormName, dict[str, np.ndarray]]
) -> dict[FormName, float]:
    """Stacking weights: non-negative least squares of the measured values on each form's out-of-fold predictions,
    each loss in units of its replicate noise, normalised to sum to one."""
    forms = list(predictions)
    measured = {"f": table.forgetting / noise.forgetting, "g": table.domain_gain / noise.domain_gain}
    scale = {"f": noise.forgetting, "g": noise.domain_gain}
    keys = [key for key in ("rung_f", "rung_g", "trial_f", "trial_g")]
    design = np.column_stack(
        [np.concatenate([predictions[form][key] / scale[key[-1]] for key in keys]) for form in forms]
    )
    target = np.concatenate([measured[key[-1]] for key in keys])
    usable = np.all(np.isfinite(design), axis=1) & np.isfinite(target)
    if np.any(usable):
        weights, _ = nnls(design[usable], target[usable])
    else:
        weights = np.zeros(len(forms))
    if not np.sum(weights) > 0:
        errors = [np.nanmean((design[:, i] - target) ** 2) if np.any(usable) else 0.0 for i in range(len(forms))]
        weights = (
            np.eye(len(forms))[int(np.nanargmin(errors))] if np.any(np.isfinite(errors)) else np.eye(len(forms))[0]
        )
    weights = weights / np.sum(weights)
    return {form: float(weight) for form, weight in zip(forms, weights)}


def _score(table: ObservationTable, prediction: dict[str, np.ndarray]) -> FormScore:
    def rmse(kind: str) -> tuple[float, float] | None:
        errors = (prediction[f"{kind}_f"] - table.forgetting, prediction[f"{kind}_g"] - table.domain_gain)
        if not all(np.any(np.isfinite(error)) for error in errors):
            return None
        first, second = (float(np.sqrt(np.nanmean(error**2))) for error in errors)
        return first, second

    return FormScore(rung_rmse=rmse("rung"), trial_rmse=rmse("trial"))
