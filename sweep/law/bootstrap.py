"""Bootstrap refits of the credible forms, the spread behind every interval and P: each on the rungs drawn with
replacement and, within each drawn rung, its trials drawn with replacement (ObservationTable.resampled), fitted from
its form's full fit, its share of the refits its stacking weight.

The draws are made here, in order, from one seeded generator; the fits, independent of one another, run in
`LawSettings.workers` processes when the table is large enough to repay them (joblib's loky pool, which spawns fresh
interpreters, safe beside a running Ray), in chunks whose results come back in order: the same seed gives the same
refits whatever the number of workers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed

from sweep.law.config import LawSettings
from sweep.law.fit import LawFitError, fit_law, one_blas_thread
from sweep.law.forms import FormName
from sweep.law.model import Law
from sweep.law.select import Laws
from sweep.law.table import ObservationTable

Progress = Callable[[str], None]
Refits = tuple[list[tuple[FormName, Law]], int]
"""Bootstrap refits, each with its form, and how many failed to fit."""
CHUNK = 10
"""Refits a worker fits per task: the tables a task carries are pickled once, and progress is said between tasks."""


@dataclass(frozen=True)
class _Draw:
    """One refit to make: its form, the full fit it starts from, its resampled rows, its seed and its curve's draw."""

    form: FormName
    warm: Law
    sample: ObservationTable
    seed: int
    curve: float


def bootstrap_refits(
    table: ObservationTable, laws: Laws, settings: LawSettings, progress: Progress | None = None
) -> Refits:
    """settings.refits bootstrap refits, shared among the credible forms by weight; and how many failed to fit. A
    curve form's refit draws its curve's uncertainty too (SizeCurve.draw), so that how far it may bend beyond the
    rungs is in its refits."""
    draws = _draws(table, laws, settings)
    chunks = [draws[start : start + CHUNK] for start in range(0, len(draws), CHUNK)]
    workers = settings.processes(len(table))
    fitted = Parallel(n_jobs=min(workers, max(1, len(chunks))), return_as="generator")(
        delayed(_fit_chunk)(chunk, settings) for chunk in chunks
    )
    refits, failed, done = [], 0, 0
    for chunk, laws_of_chunk in zip(chunks, fitted):
        for draw, law in zip(chunk, laws_of_chunk):
            if law is None:
                failed += 1
            else:
                refits.append((draw.form, law))
        done += len(chunk)
        if progress is not None:
            progress(f"bootstrap refits: {done} of {settings.refits}")
    return refits, failed


def _draws(table: ObservationTable, laws: Laws, settings: LawSettings) -> list[_Draw]:
    """Every refit's rows, seed and curve draw, in order from the settings' seed."""
    credible = laws.credible
    total = sum(fit.weight for fit in credible)
    counts = _shares([fit.weight / total for fit in credible], settings.refits)
    rng = np.random.default_rng(settings.seed)
    draws = []
    for fit, count in zip(credible, counts):
        for _ in range(count):
            sample = table.resampled(rng)
            curve = float(np.clip(rng.standard_normal(), -10.0, 10.0))
            draws.append(_Draw(fit.form, fit.law, sample, (settings.seed + 1 + len(draws)) % 2**32, curve))
    return draws


def _fit_chunk(chunk: list[_Draw], settings: LawSettings) -> list[Law | None]:
    """Each draw's refit (None: it failed), with its curve's draw."""
    laws = []
    with one_blas_thread():
        for draw in chunk:
            seeded = settings.model_copy(update={"seed": draw.seed})
            try:
                law = fit_law(draw.sample, seeded, form=draw.form, warm=draw.warm, starts=settings.refit_starts)
            except LawFitError:
                laws.append(None)
                continue
            laws.append(_drawn(law, draw.curve))
    return laws


def _drawn(law: Law, draw: float) -> Law:
    """A refit with its draw of its size curve's uncertainty (one draw for both losses' curves: they bend with the
    same models), or the refit itself for a power-law form."""
    if law.general.curve is None:
        return law
    losses = {
        name: loss.model_copy(update={"curve": loss.curve.model_copy(update={"draw": draw})})
        for name, loss in (("general", law.general), ("domain", law.domain))
    }
    return law.model_copy(update=losses)


def _shares(weights: list[float], total: int) -> list[int]:
    """`total` split in proportion to `weights`, by largest remainder."""
    exact = np.array(weights) * total
    counts = np.floor(exact).astype(int)
    for index in np.argsort(-(exact - counts))[: total - int(np.sum(counts))]:
        counts[index] += 1
    return counts.tolist()
