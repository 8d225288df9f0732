"""The prediction at a target, with what the law does not know: bootstrap refits of every credible form (rungs
resampled, then trials within them; each form's share of the refits its stacking weight), the pick's rule over them
(sweep.law.chance: the highest lower-confidence domain_gain among points with P(forgetting <= budget) >=
objective.pick.min_probability), 90 % intervals that hold the spread between the forms as well as the noise, and a
refusal instead of a number when the law cannot stand behind one.

Every figure of a prediction is evaluated at the point it would promote, as a plan writes it: its gain and
forgetting intervals are the refits' laws there, not at each refit's own optimum, whose spread is the position
intervals'.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np
from pydantic import Field
from scipy import special as scipy_special
from scipy.stats import norm
from scipy.stats import t as student_t

from sweep.law.chance import ensemble_answer, probability_at
from sweep.law.config import LawSettings
from sweep.law.fit import LawFitError, fit_law
from sweep.law.forms import FormName
from sweep.law.model import Law
from sweep.law.noise import MISFIT
from sweep.law.optimum import (
    Point,
    Refusal,
    SearchBox,
    Surface,
    TargetScale,
    at,
    constrained_optimum,
    credibility,
    promotable,
)
from sweep.law.select import Laws
from sweep.law.table import ObservationTable
from sweep.study.config import PickConfig
from train_entry.config import StrictConfig

Progress = Callable[[str], None]
Refits = tuple[list[tuple[FormName, Law]], int]
"""Bootstrap refits, each with its form, and how many failed to fit."""


class Interval(StrictConfig):
    low: float
    high: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


class Intervals(StrictConfig):
    """Central intervals over the bootstrap refits of every credible form, at the prediction's level."""

    level: float
    lr_fraction: Interval
    """Of the refits' own (mean-constrained) optima."""
    domain_share: Interval
    domain_gain: Interval
    """Of the refits' laws at the promoted point."""
    forgetting: Interval


class FormAnswer(StrictConfig):
    """One form's own answer at the target, beside the others."""

    form: FormName
    weight: float = Field(ge=0.0, le=1.0)
    optimum: Point | None
    """Its full fit's mean-constrained optimum (None: no point keeps the budget)."""
    toward: list[str]
    refits: int = Field(ge=0)
    """Refits drawn from this form."""


class TargetPrediction(StrictConfig):
    """What the law says at one target."""

    target: TargetScale
    forgetting_budget: float = Field(ge=0.0)
    box: SearchBox
    pick: PickConfig
    """The rule the answer follows: the spec's objective.pick (a ladder), or --min-probability (sweep law fit)."""
    optimum: Point | None
    """The chance-constrained point, as a plan writes it, with the answer's mean law there: the point promoted.
    None when no point reaches pick.min_probability (or the law gave no refits to measure P)."""
    within_budget: float | None = Field(None, ge=0.0, le=1.0)
    """P(forgetting <= budget) at the optimum: the share of refits whose law keeps it there."""
    lower_gain: float | None = None
    """The refits' mean domain_gain at the optimum less pick.gain_lower_sd standard deviations."""
    mean_optimum: Point | None
    """The mean-constrained point: the highest domain_gain of the answer's mean law with forgetting at most the
    budget, where P is near one half (shown beside the optimum, never promoted)."""
    mean_within_budget: float | None = Field(None, ge=0.0, le=1.0)
    best_probability: float | None = Field(None, ge=0.0, le=1.0)
    """The largest P anywhere the optimum was looked for."""
    toward: list[str]
    """Directions in which the answer lies outside the box."""
    intervals: Intervals | None
    forms: list[FormAnswer] = Field(default_factory=list)
    refits: int = Field(ge=0)
    refits_outside: int = Field(ge=0)
    """Refits whose optimum lies outside the box."""
    refits_without: int = Field(ge=0)
    """Refits with no optimum: no point met the budget, the fit failed, or the resample could not extrapolate."""
    refusal: Refusal | None

    @property
    def credible(self) -> bool:
        return self.refusal is None


def predict(
    table: ObservationTable,
    laws: Laws,
    target: TargetScale,
    box: SearchBox,
    budget: float,
    settings: LawSettings,
    pick: PickConfig,
    *,
    progress: Progress | None = None,
    refits: Refits | None = None,
) -> TargetPrediction:
    """The law's answer at `target` by the pick's rule, with intervals, or a refusal saying why there is none;
    `refits` (bootstrap_refits' of the same table, laws and settings) when the caller has them already."""
    mean = laws.stacked()
    base = {"target": target, "forgetting_budget": budget, "box": box, "pick": pick}
    refused = credibility(laws.best.law, target, table)
    if refused is not None:
        return TargetPrediction(
            **base, optimum=None, mean_optimum=None, toward=[], intervals=None, refits=0, refits_outside=0,
            refits_without=0, refusal=refused,
        )  # fmt: skip
    mean_optimum = constrained_optimum(mean, target, box, budget)
    refits, failed = bootstrap_refits(table, laws, settings, progress) if refits is None else refits
    ensemble = [law for _, law in refits]
    answer = ensemble_answer(ensemble, mean, target, box, budget, pick) if ensemble else None
    chance = answer.chance if answer else None
    shown = promotable(mean, target, mean_optimum.point) if mean_optimum.point else None
    promoted = chance.point if chance else None
    optima = answer.optima if answer else []
    prediction = TargetPrediction(
        **base,
        optimum=promoted,
        within_budget=chance.probability if chance else None,
        lower_gain=chance.lower_gain if chance else None,
        mean_optimum=shown,
        mean_within_budget=_probability(ensemble, target, shown, budget),
        best_probability=answer.best_probability if answer else None,
        toward=box.outside(promoted.lr_fraction, promoted.domain_share) if promoted else mean_optimum.toward,
        intervals=_intervals(
            ensemble,
            optima,
            promoted or shown,
            target,
            settings.level,
            _alternatives(laws, target, box, budget),
            few_rungs(len(set(table.parameters.tolist())), settings.level),
        ),
        forms=_form_answers(laws, refits, target, box, budget),
        refits=len(refits) + failed,
        refits_outside=sum(1 for point in optima if point is not None and _outside(box, point)),
        refits_without=failed + sum(1 for point in optima if point is None),
        refusal=None,
    )
    refusal = _refusal(prediction, laws, mean_optimum.least_forgetting, optima, settings)
    return prediction.model_copy(update={"refusal": refusal})


def _outside(box: SearchBox, point: Point) -> list[str]:
    return box.outside(point.lr_fraction, point.domain_share)


def bootstrap_refits(
    table: ObservationTable, laws: Laws, settings: LawSettings, progress: Progress | None = None
) -> Refits:
    """settings.refits bootstrap refits, shared among the credible forms by weight; and how many failed to fit."""
    credible = laws.credible
    total = sum(fit.weight for fit in credible)
    counts = _shares([fit.weight / total for fit in credible], settings.refits)
    rng = np.random.default_rng(settings.seed)
    refits, failed, done = [], 0, 0
    for fit, count in zip(credible, counts):
        for _ in range(count):
            sample = table.resampled(rng)
            seeded = settings.model_copy(update={"seed": (settings.seed + 1 + done) % 2**32})
            done += 1
            try:
                refit = fit_law(sample, seeded, form=fit.form, warm=fit.law, starts=settings.refit_starts)
            except LawFitError:
                failed += 1
                continue
            refits.append((fit.form, refit))
            if progress is not None and (done % 20 == 0 or done == settings.refits):
                progress(f"bootstrap refits: {done} of {settings.refits}")
    return refits, failed


def _shares(weights: list[float], total: int) -> list[int]:
    """`total` split in proportion to `weights`, by largest remainder."""
    exact = np.array(weights) * total
    counts = np.floor(exact).astype(int)
    for index in np.argsort(-(exact - counts))[: total - int(np.sum(counts))]:
        counts[index] += 1
    return counts.tolist()


def _probability(ensemble: list[Law], target: TargetScale, point: Point | None, budget: float) -> float | None:
    return probability_at(ensemble, target, point, budget) if ensemble and point is not None else None


Scale = tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]
"""(to, back): the scale on which an interval is widened, so that its ends stay values a point can have."""
LINEAR: Scale = (np.asarray, np.asarray)
LOG: Scale = (np.log, np.exp)
"""lr_fraction: multiplicative, as its targets are (x1.3); a widened end never reaches 0."""
LOGIT: Scale = (scipy_special.logit, scipy_special.expit)
"""The domain share: a widened end stays inside (0, 1)."""


def _interval(values: list[float], level: float, widen: float = 1.0, scale: Scale = LINEAR) -> Interval:
    """The central `level` interval of `values`, its half-width on `scale` times `widen` about its middle."""
    to, back = scale
    tail = 50.0 * (1.0 - level)
    low, high = np.percentile(to(np.asarray(values, dtype=float)), [tail, 100.0 - tail])
    middle, half = (low + high) / 2.0, widen * (high - low) / 2.0
    ends = back(np.array([middle - half, middle + half]))
    return Interval(low=float(ends[0]), high=float(ends[1]))


def few_rungs(rungs: int, level: float) -> float:
    """How much wider a percentile interval over a bootstrap of `rungs` clusters must be: such a bootstrap's
    variance is (G - 1) / G of the estimator's, and with few clusters the critical value is Student's t with G - 1
    degrees of freedom, not the normal's (Cameron, Gelbach and Miller, "Bootstrap-based improvements for inference
    with clustered errors", Review of Economics and Statistics 90(3), 2008). 1.65 at four rungs and 90 %: on
    ladders drawn from a law none of the forms contains, the refits' own intervals (40 refits) held the optimum in 6
    of 10 draws (benchmarks/law_coverage.py), missing by up to 1.65 half-widths."""
    if rungs < 2:
        return 1.0
    tail = (1.0 + level) / 2.0
    return math.sqrt(rungs / (rungs - 1)) * float(student_t.ppf(tail, rungs - 1) / norm.ppf(tail))


def _alternatives(laws: Laws, target: TargetScale, box: SearchBox, budget: float) -> list[tuple[Law, Point | None]]:
    """Each credible form's full fit and its fits without each rung, with their optima at the target (None: no point
    keeps the budget)."""
    alternatives = []
    for fit in laws.credible:
        for law in [fit.law, *fit.without_rung]:
            optimum = constrained_optimum(law, target, box, budget)
            alternatives.append((law, optimum.point))
    return alternatives


def _intervals(
    ensemble: list[Law],
    optima: list[Point | None],
    point: Point | None,
    target: TargetScale,
    level: float,
    alternatives: list[tuple[Law, Point | None]],
    widen: float,
) -> Intervals | None:
    """The refits' central intervals, their half-widths times `widen` (few_rungs), and widened again to hold every
    alternative's value: the spread between the credible forms and their fits without a rung."""
    positions = [optimum for optimum in optima if optimum is not None]
    if not positions or point is None:
        return None
    there = [at(law, target, point.lr_fraction, point.domain_share) for law in ensemble]
    elsewhere = [at(law, target, point.lr_fraction, point.domain_share) for law, _ in alternatives]
    moved = [optimum for _, optimum in alternatives if optimum is not None]

    def hull(values: list[float], others: list[float], scale: Scale = LINEAR) -> Interval:
        return _hull(values, others, level, widen, scale)

    # lr_fraction and the share are widened on the scales where their ends stay values a plan can have: widened
    # linearly, the bundled ladder's folds reached below 0 in lr_fraction and were cut at 0, an interval that held
    # every LR down to none and so covered whatever a rung measured.
    return Intervals(
        level=level,
        lr_fraction=hull([p.lr_fraction for p in positions], [p.lr_fraction for p in moved], LOG),
        domain_share=hull([p.domain_share for p in positions], [p.domain_share for p in moved], LOGIT),
        domain_gain=hull([p.domain_gain for p in there], [p.domain_gain for p in elsewhere]),
        forgetting=hull([p.forgetting for p in there], [p.forgetting for p in elsewhere]),
    )


def _hull(values: list[float], others: list[float], level: float, widen: float, scale: Scale = LINEAR) -> Interval:
    """The central `level` interval of `values` widened by `widen` on `scale`, and again to hold every finite one of
    `others`."""
    interval = _interval(values, level, widen, scale)
    finite = [value for value in others if np.isfinite(value)]
    return Interval(low=min([interval.low, *finite]), high=max([interval.high, *finite]))


class TrajectoryPoint(StrictConfig):
    """The law's forgetting at one point of the full run, part-way through it."""

    tokens: float = Field(gt=0.0)
    """The run's tokens so far."""
    forgetting: float
    """The answer's mean law at the promoted point, at these tokens and the LR area so far."""
    interval: Interval
    """As predict() bounds forgetting at the end, evaluated here (its level is the settings')."""


def trajectory(
    table: ObservationTable,
    laws: Laws,
    refits: Refits,
    targets: list[TargetScale],
    lr_fraction: float,
    domain_share: float,
    settings: LawSettings,
) -> list[TrajectoryPoint]:
    """The law's forgetting at the point along the run, one entry per target (the same run at fewer tokens, with the
    LR area its schedule has reached there): the mean law's value and the interval predict() gives at the end, the
    refits' central interval (`refits`: predict()'s) widened for few rungs and to every credible form's fits and fits
    without a rung, each evaluated at that target. Empty when no refit fits."""
    ensemble = [law for _, law in refits[0]]
    if not ensemble:
        return []
    mean = laws.stacked()
    alternatives = [law for fit in laws.credible for law in [fit.law, *fit.without_rung]]
    widen = few_rungs(len(set(table.parameters.tolist())), settings.level)
    points = []
    for target in targets:

        def forgetting(law: Surface, target: TargetScale = target) -> float:
            return at(law, target, lr_fraction, domain_share).forgetting

        values, others = [forgetting(law) for law in ensemble], [forgetting(law) for law in alternatives]
        points.append(
            TrajectoryPoint(
                tokens=target.tokens,
                forgetting=forgetting(mean),
                interval=_hull(values, others, settings.level, widen),
            )
        )
    return points


def _form_answers(
    laws: Laws, refits: list[tuple[FormName, Law]], target: TargetScale, box: SearchBox, budget: float
) -> list[FormAnswer]:
    drawn = Counter(form for form, _ in refits)
    answers = []
    for fit in laws.forms:
        optimum = constrained_optimum(fit.law, target, box, budget)
        point = promotable(fit.law, target, optimum.point) if optimum.point else None
        answers.append(
            FormAnswer(form=fit.form, weight=fit.weight, optimum=point, toward=optimum.toward, refits=drawn[fit.form])
        )
    return answers


def _refusal(
    prediction: TargetPrediction, laws: Laws, least: float, optima: list[Point | None], settings: LawSettings
) -> Refusal | None:
    """Why nothing is promoted, first reason first: the form does not fit the runs, nothing measures P, the answer
    lies outside the box, no point reaches the rule's P, or too many refits put their optimum outside the box."""
    name, best = prediction.target.name, laws.best
    if not best.misfit.fits:
        return Refusal(
            kind="no_credible_prediction",
            message=f"the law does not fit these runs ({best.misfit.line()}; best form {best.form}, more than "
            f"{MISFIT:g} times the noise)",
        )
    if prediction.refits == 0:
        return Refusal(
            kind="no_credible_prediction",
            message=f"no credible prediction at {name}: P(forgetting <= budget) is measured by bootstrap refits, and "
            "none were made (--refits 0 / ladder.law.refits 0)",
        )
    point = prediction.optimum or prediction.mean_optimum
    if point is not None and prediction.toward:
        where = f"lr_fraction {point.lr_fraction:.3g} and mix {point.mix} (domain share {point.domain_share:.3g})"
        return Refusal(
            kind="extend_space",
            message=f"extend the space toward {' and '.join(prediction.toward)}: the law's optimum at {name}, "
            f"{where}, lies outside the searched box",
        )
    if prediction.optimum is None:
        return Refusal(kind="no_credible_prediction", message=_below_threshold(prediction, least))
    return _astray(prediction, optima, settings)


def _below_threshold(prediction: TargetPrediction, least: float) -> str:
    name, pick, budget = prediction.target.name, prediction.pick, prediction.forgetting_budget
    mean = prediction.mean_optimum
    if mean is None:
        return (
            f"no credible prediction at {name}: no lr_fraction and mix near the searched box keep forgetting within "
            f"the budget {budget:.4g}; the least the law predicts is {least:.4g}"
        )
    best = prediction.best_probability or 0.0
    at_mean = "unknown" if prediction.mean_within_budget is None else f"{prediction.mean_within_budget:.2f}"
    return (
        f"no credible prediction at {name}: no point keeps forgetting within the budget {budget:.4g} with "
        f"P >= {pick.min_probability:g} (objective.pick.min_probability); the most any point reaches is {best:.2f}, "
        f"and the mean-constrained optimum (lr_fraction {mean.lr_fraction:.3g}, mix {mean.mix}) has P {at_mean}"
    )


def _astray(prediction: TargetPrediction, optima: list[Point | None], settings: LawSettings) -> Refusal | None:
    name, point = prediction.target.name, prediction.optimum
    astray = prediction.refits_outside + prediction.refits_without
    refits = prediction.refits
    if not refits or astray <= settings.outside_limit * refits:
        return None
    where = f"lr_fraction {point.lr_fraction:.3g} and mix {point.mix} (domain share {point.domain_share:.3g})"
    share = f"{astray} of {refits} bootstrap refits ({astray / refits:.0%})"
    box = prediction.box
    sides = Counter(side for optimum in optima if optimum is not None for side in _outside(box, optimum))
    common = [side for side, count in sides.most_common() if count > astray / 2]
    if common and prediction.refits_outside >= prediction.refits_without:
        return Refusal(
            kind="extend_space",
            message=f"extend the space toward {' and '.join(common)}: {share} put the optimum at {name} outside the "
            f"searched box (the answer is inside, at {where})",
        )
    return Refusal(
        kind="no_credible_prediction",
        message=f"no credible prediction at {name}: {share} put the optimum outside the searched box or find none "
        f"(the answer is at {where}), more than the {settings.outside_limit:.0%} a prediction may lose",
    )
