"""The prediction at a target, with what the law does not know: bootstrap refits of every credible form (rungs
resampled, then trials within them; each form's share of the refits its stacking weight), each with a draw of the
form's own error at the target (sweep.law.discrepancy, sweep.law.discrepant), the pick's rule over them
(sweep.law.chance: the highest lower-confidence domain_gain among points with P(forgetting <= budget) >=
objective.pick.min_probability), 90 % intervals that hold the noise, the spread between the forms and the form's
error, and a refusal instead of a number when the law cannot stand behind one (sweep.law.refusal).

Every figure of a prediction is evaluated at the point it would promote, as a plan writes it: its gain and
forgetting intervals are the refits' laws there, not at each refit's own optimum, whose spread is the position
intervals'.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import Field
from scipy import special as scipy_special
from scipy.stats import norm
from scipy.stats import t as student_t

from sweep.law.bootstrap import Progress, Refits, bootstrap_refits
from sweep.law.chance import ChancePoint, EnsembleAnswer, ensemble_answer, probability_at
from sweep.law.config import LawSettings
from sweep.law.discrepancy import Discrepancy
from sweep.law.discrepant import Discrepant, discrepant
from sweep.law.fit import one_blas_thread
from sweep.law.forms import FormName
from sweep.law.lattice import MATERIAL, Lattice
from sweep.law.model import Law
from sweep.law.optimum import Point, SearchBox, Surface, at, constrained_optimum, credibility, promotable
from sweep.law.prediction import AtEdge, DiscrepancyAt, FormAnswer, Interval, Intervals, Sources, TargetPrediction
from sweep.law.refusal import Least, refusal
from sweep.law.select import Laws
from sweep.law.table import ObservationTable
from sweep.study.config import PickConfig
from sweep.target.scale import TargetScale
from train_entry.config import StrictConfig


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
    with one_blas_thread():
        return _predict(table, laws, target, box, budget, settings, pick, progress, refits)


def _predict(
    table: ObservationTable,
    laws: Laws,
    target: TargetScale,
    box: SearchBox,
    budget: float,
    settings: LawSettings,
    pick: PickConfig,
    progress: Progress | None,
    refits: Refits | None,
) -> TargetPrediction:
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
    carried = discrepancy_at(laws.discrepancy, target)
    plain = [law for _, law in refits]
    ensemble = with_discrepancy(plain, carried, box, settings)
    answer = ensemble_answer(ensemble, mean, target, box, budget, pick) if ensemble else None
    lattice = Lattice(ensemble, target, box, budget) if ensemble else None
    chance, at_edge = _at_edge(answer, laws.noise.domain_gain, carried.domain_gain, box)
    shown = promotable(mean, target, mean_optimum.point) if mean_optimum.point else None
    promoted = chance.point if chance else None
    optima = answer.optima if answer else []
    plain_optima = [constrained_optimum(law, target, box, budget).point for law in plain]
    # Whether the runs put a better point beyond the box is the refits' own say: the discrepancy's draws widen the
    # intervals, which may reach past the box, but carry no evidence of where the optimum lies; a point beyond it
    # counts only where it keeps the budget with the form's error in forgetting at the rule's probability (margin).
    margin = math.exp(max(0.0, float(norm.ppf(pick.min_probability))) * carried.forgetting)
    beyond = lattice.beyond(laws.noise.domain_gain, carried.domain_gain, margin) if lattice else []
    draws = _Draws([form for form, _ in refits], plain, ensemble, optima, plain_optima)
    widen = few_rungs(len(set(table.parameters.tolist())), settings.level)
    prediction = TargetPrediction(
        **base,
        **_lattice_figures(lattice, carried, beyond, failed),
        optimum=promoted,
        within_budget=chance.probability if chance else None,
        lower_gain=chance.lower_gain if chance else None,
        mean_optimum=shown,
        mean_within_budget=_probability(ensemble, target, shown, budget),
        best_probability=answer.best_probability if answer else None,
        toward=box.outside(promoted.lr_fraction, promoted.domain_share) if promoted else mean_optimum.toward,
        at_edge=at_edge,
        intervals=_intervals(draws, promoted or shown, target, settings.level, widen),
        discrepancy=carried,
        forms=_form_answers(laws, refits, target, box, budget),
        refits=len(refits) + failed,
        refusal=None,
    )
    reach = lattice.reach if lattice else _nowhere
    at_size = functools.partial(_least_near_box, mean, target, box, budget)
    least = Least(target=mean_optimum.least_forgetting, at=at_size)
    why = refusal(prediction, laws, least, [v.toward for v in beyond], settings, reach)
    return prediction.model_copy(update={"refusal": why})


def _least_near_box(mean: Surface, target: TargetScale, box: SearchBox, budget: float, parameters: float) -> float:
    """The least forgetting the law predicts near the box at `parameters`, with the target's tokens and schedule."""
    return constrained_optimum(mean, target.model_copy(update={"parameters": parameters}), box, budget).least_forgetting


def _at_edge(
    answer: EnsembleAnswer | None, noise: float, relative: float, box: SearchBox
) -> tuple[ChancePoint | None, AtEdge | None]:
    """The rule's point, or its best inside the box when the point lies beyond it by a lower-confidence gain within
    MATERIAL x the replicates' noise and the form's error in domain_gain (as a refit's point beyond counts against
    the box, sweep.law.lattice): along the budget's contour the gain is nearly flat, and a point a hair past the
    box's edge is the edge's answer, not a reason to search elsewhere."""
    chance = answer.chance if answer else None
    if chance is None or answer.inside is None or answer.inside is chance:
        return chance, None
    inside = answer.inside
    material = MATERIAL * math.hypot(noise, relative * max(inside.point.domain_gain, 0.0))
    more = chance.lower_gain - inside.lower_gain
    if more > material:
        return chance, None
    return inside, AtEdge(beyond=chance.point, gains_more=max(more, 0.0), material=material)


def _lattice_figures(lattice: Lattice | None, carried: DiscrepancyAt, beyond: list, failed: int) -> dict:
    """What the refits reach inside the box with and without the form's error, and how many put a better point
    beyond it or keep the budget nowhere."""
    return {
        "inside_probability": lattice.reach(carried.forgetting) if lattice else None,
        "plain_inside_probability": lattice.reach(0.0) if lattice else None,
        "refits_outside": sum(1 for verdict in beyond if verdict.toward),
        "refits_without": failed + sum(1 for verdict in beyond if not verdict.feasible),
    }


def _nowhere(forgetting_sd: float) -> float:
    """No refits: no point reaches any P."""
    return 0.0


def discrepancy_at(discrepancy: Discrepancy, target: TargetScale) -> DiscrepancyAt:
    """The relative sds the answer carries at `target`: at the rungs', growing with its distance from them (only the
    rungs' own when the growth is unknown: the refusal then says so)."""
    distance = discrepancy.distance(target.parameters)
    known = discrepancy.growth_known()

    def sd(loss) -> float:
        value = loss.sd(distance, target.parameters)
        return loss.sd(0.0, target.parameters) if value is None else value

    return DiscrepancyAt(
        distance=distance,
        forgetting=sd(discrepancy.forgetting),
        domain_gain=sd(discrepancy.domain_gain),
        growth_known=known,
    )


def with_discrepancy(
    laws: Sequence[Law], carried: DiscrepancyAt, box: SearchBox, settings: LawSettings
) -> list[Discrepant]:
    """Each refit with its seeded draw of the discrepancy carried at the target."""
    return discrepant(laws, box, carried.forgetting, carried.domain_gain, settings.seed)


def _probability(ensemble: Sequence[Surface], target: TargetScale, point: Point | None, budget: float) -> float | None:
    return probability_at(ensemble, target, point, budget) if ensemble and point is not None else None


Scale = tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]
"""(to, back): the scale on which an interval is widened, so that its ends stay values a point can have."""
LINEAR: Scale = (np.asarray, np.asarray)
LOG: Scale = (np.log, np.exp)
"""lr_fraction: multiplicative, as its targets are (x1.3); a widened end never reaches 0."""
LOGIT: Scale = (scipy_special.logit, scipy_special.expit)
"""The domain share: a widened end stays inside (0, 1)."""


def _interval(values: Sequence[float], level: float, widen: float = 1.0, scale: Scale = LINEAR) -> Interval:
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


@dataclass(frozen=True)
class _Draws:
    """The refits as the intervals read them: each one's form, its law alone and with its discrepancy draw, and
    their optima (None: no point keeps the budget)."""

    forms: list[FormName]
    plain: list[Law]
    carried: list[Discrepant]
    optima: list[Point | None]
    """With the discrepancy draw."""
    plain_optima: list[Point | None]


def _intervals(draws: _Draws, point: Point | None, target: TargetScale, level: float, widen: float) -> Intervals | None:
    """The refits' central intervals (each refit with its discrepancy draw), their half-widths times `widen`
    (few_rungs), each with the shares of its variance that the noise, the spread between forms and the discrepancy
    make."""
    both = [
        (form, plain, carried)
        for form, plain, carried in zip(draws.forms, draws.plain_optima, draws.optima)
        if plain is not None and carried is not None
    ]
    if not both or point is None:
        return None
    forms = [form for form, _, _ in both]

    def position(field: str, scale: Scale) -> Interval:
        values = [getattr(carried, field) for _, _, carried in both]
        alone = [getattr(plain, field) for _, plain, _ in both]
        return _sourced(values, alone, forms, level, widen, scale)

    def value(field: str) -> Interval:
        def there(law: Surface) -> float:
            return getattr(at(law, target, point.lr_fraction, point.domain_share), field)

        return _sourced(
            [there(law) for law in draws.carried],
            [there(law) for law in draws.plain],
            draws.forms,
            level,
            widen,
            LINEAR,
        )

    # lr_fraction and the share are widened on the scales where their ends stay values a plan can have: widened
    # linearly, the bundled ladder's folds reached below 0 in lr_fraction and were cut at 0, an interval that held
    # every LR down to none and so covered whatever a rung measured.
    return Intervals(
        level=level,
        lr_fraction=position("lr_fraction", LOG),
        domain_share=position("domain_share", LOGIT),
        domain_gain=value("domain_gain"),
        forgetting=value("forgetting"),
    )


def _sourced(
    values: Sequence[float], alone: Sequence[float], forms: Sequence[FormName], level: float, widen: float, scale: Scale
) -> Interval:
    """The interval of `values` (with the discrepancy), and the shares of their variance on `scale` that the noise
    (within each form of `alone`, the values without it), the spread between forms and the discrepancy make."""
    interval = _interval(values, level, widen, scale)
    return interval.model_copy(update={"sources": sources(values, alone, forms, scale)})


def sources(
    values: Sequence[float], alone: Sequence[float], forms: Sequence[FormName], scale: Scale = LINEAR
) -> Sources:
    """Variance shares: within-form variance of `alone` (the noise), between the forms' means of `alone` (the form
    spread), and what the discrepancy adds (the variance of `values` over that of `alone`, at least 0)."""
    to, _ = scale
    carried, plain = to(np.asarray(values, dtype=float)), to(np.asarray(alone, dtype=float))
    labels = np.asarray(forms)
    finite = np.isfinite(carried) & np.isfinite(plain)
    carried, plain, labels = carried[finite], plain[finite], labels[finite]
    if not len(plain):
        return Sources(noise=1.0, forms=0.0, discrepancy=0.0)
    centre = float(np.mean(plain))
    within = between = 0.0
    for form in dict.fromkeys(labels.tolist()):
        mine = plain[labels == form]
        within += float(np.sum((mine - np.mean(mine)) ** 2))
        between += len(mine) * float((np.mean(mine) - centre) ** 2)
    within, between = within / len(plain), between / len(plain)
    added = max(0.0, float(np.var(carried)) - float(np.var(plain)))
    total = within + between + added
    if total <= 0.0:
        return Sources(noise=1.0, forms=0.0, discrepancy=0.0)
    noise, forms = within / total, between / total
    return Sources(noise=noise, forms=forms, discrepancy=max(0.0, 1.0 - noise - forms))


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
    box: SearchBox,
    settings: LawSettings,
) -> list[TrajectoryPoint]:
    """The law's forgetting at the point along the run, one entry per target (the same run at fewer tokens, with the
    LR area its schedule has reached there): the mean law's value and the interval predict() gives at the end, the
    refits' central interval (`refits`: predict()'s), each with the same draw of the discrepancy predict() gives it at
    the last target (the full run), widened for few rungs, each evaluated at that target. Empty when no refit fits."""
    plain = [law for _, law in refits[0]]
    if not plain or not targets:
        return []
    mean = laws.stacked()
    ensemble = with_discrepancy(plain, discrepancy_at(laws.discrepancy, targets[-1]), box, settings)
    widen = few_rungs(len(set(table.parameters.tolist())), settings.level)
    points = []
    for target in targets:

        def forgetting(law: Surface, target: TargetScale = target) -> float:
            return at(law, target, lr_fraction, domain_share).forgetting

        points.append(
            TrajectoryPoint(
                tokens=target.tokens,
                forgetting=forgetting(mean),
                interval=_interval([forgetting(law) for law in ensemble], settings.level, widen),
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
