"""The pick: the point a sweep recommends, chosen on the surrogate by a stated rule, with its evidence.

Rule (PickConfig, the spec's `objective.pick`): the candidates are a fine grid over the searched
lr_fraction range (log-spaced when the range is) times the listed mixes (or a grid over a mix range),
plus every tried point. Of those whose re-measured forgetting stays within the budget with probability
>= min_probability, the pick is the one with the highest lower-confidence domain_gain (predicted mean
less gain_lower_sd standard deviations of the surface). With fewer than MIN_DISTINCT_POINTS distinct
completed points there is no surrogate, and when no candidate qualifies there is no surrogate pick:
either way the pick is the best observed trial (or nothing), and `reason` says which and why.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import Field, model_validator

from sweep.choice.downstream import DropSurfaces, held_back_by
from sweep.choice.points import point_summaries, seed_noise
from sweep.choice.surrogate import (
    MIN_DISTINCT_POINTS,
    Z90,
    Predictions,
    Surrogate,
    SurrogateFit,
    completed,
    distinct_points,
    fit_surrogate,
    point_key,
)
from sweep.space import LRFractionRange, MixRange, SearchSpace
from sweep.study.config import PickConfig
from sweep.study.row import TrialRow
from train_entry.config import StrictConfig
from train_entry.mix import ratio_of
from train_entry.trial_config import MAX_LOSS

LR_GRID = 41
"""Candidate lr_fractions over a range: steps of 3.5 % over the default 0.05-0.20, finer than a proxy
trial's noise can tell apart."""
MIX_GRID = 21
"""Candidate mixes over a mix range, evenly spaced in log(general / domain)."""


class PickSource(str, enum.Enum):
    SURROGATE = "surrogate"
    """The surrogate's point under the rule."""
    OBSERVED = "observed"
    """The best feasible completed trial, when the surrogate cannot pick."""
    LADDER = "ladder"
    """A ladder's loss law's optimum at a promotion target's size (a plan's, never a sweep's best.json)."""


class PickedPoint(StrictConfig):
    lr_fraction: float
    mix: str
    """general:domain as the space writes it: a listed ratio, or one from a mix range's grid."""
    domain_share: float
    trials: list[int]
    """Completed trials run at exactly this point (replicates included); empty between tried points."""
    measured_gain: float | None
    """Mean final domain_gain of those trials."""
    measured_forgetting: float | None


class Prediction(StrictConfig):
    """The surrogate's prediction of one metric at one point."""

    mean: float = Field(ge=-MAX_LOSS, le=MAX_LOSS)
    """Like every figure, a difference of two losses, each at most MAX_LOSS: a best.json read back is bounded so, and
    its intervals recomputed from it stay finite (a fuzzed sd of 1e154 made them infinite and the check a traceback)."""
    sd: float = Field(ge=0.0, le=MAX_LOSS)
    """Of the smooth value on the search's validation text (what many re-runs measured there would average to)."""
    noise_sd: float = Field(ge=0.0, le=MAX_LOSS)
    """Of one run around it (learned)."""
    text_sd: float = Field(0.0, ge=0.0, le=MAX_LOSS)
    """Of the validation text's share of one run: what other text of the pool's kind and size moves it by."""
    low: float
    high: float
    """90 % interval of the smooth value on the text population: the surface's uncertainty and the pool's text error
    (the surface was fitted on the pool), what many re-runs on much text would average to."""
    remeasured_low: float
    remeasured_high: float
    """90 % interval of one re-run at the point, at a fresh seed on fresh text of the pool's size."""

    @classmethod
    def at(cls, predictions: Predictions, index: int) -> Prediction:
        mean, sd = float(predictions.mean[index]), float(predictions.sd[index])
        remeasured = float(predictions.remeasured_sd()[index])
        smooth = math.hypot(sd, predictions.text_sd)
        return cls(
            mean=mean,
            sd=sd,
            noise_sd=predictions.noise_sd,
            text_sd=predictions.text_sd,
            low=mean - Z90 * smooth,
            high=mean + Z90 * smooth,
            remeasured_low=mean - Z90 * remeasured,
            remeasured_high=mean + Z90 * remeasured,
        )


class DropPrediction(Prediction):
    """The surrogate's prediction of a downstream task's drop at a point."""

    probability_within_budget: float = Field(ge=0.0, le=1.0)
    """P(a re-run's drop <= the task's budget) under its GP; the rule requires the product of these and the
    forgetting's to reach min_probability (sweep/choice/downstream.py)."""


class Comparison(StrictConfig):
    """A tried point against the pick: how much more a re-run at the pick would gain than one at the point, each at
    a fresh seed on other text of the kind."""

    point: PickedPoint
    gain_difference: float
    """The surrogate's posterior mean of gain(pick) - gain(point) (both on the pool, the text it was fitted to)."""
    low: float
    high: float
    """90 % interval of the difference between two such re-runs: the surface's joint uncertainty at the two points,
    each re-run's seed noise (the surrogate's learned noise, never below the replicates' measured spread), and each
    point's text error (counted as if the two texts' offsets were independent: a bound, as two points measured on one
    text share much of it)."""
    indistinguishable: bool
    """The interval includes 0: the trials cannot tell this point's gain from the pick's."""
    probability_within_budget: float
    """P(a re-run at this point ends within the forgetting budget) under the same surrogate."""
    excluded: bool = False
    """Confirmed over the budget at fresh seeds in an earlier round: no candidate may be this point."""
    probability_within_budgets: float | None = Field(None, ge=0.0, le=1.0)
    """P(a re-run at this point ends within the forgetting budget and every downstream budget), the product the rule
    reads (sweep/choice/downstream.py); None without a downstream budget."""

    @property
    def gains_more(self) -> bool:
        """The point gains measurably more than the pick (the whole interval of the difference is below 0)."""
        return self.high < 0.0

    @property
    def gains_less(self) -> bool:
        """The pick gains measurably more than the point (the whole interval is above 0)."""
        return self.low > 0.0


class Pick(StrictConfig):
    """What best.json recommends, where it comes from, and how sure it is."""

    source: PickSource | None
    """None: nothing to recommend (no surrogate pick and no feasible completed trial)."""
    point: PickedPoint | None
    reason: str
    """Why this source: the rule's outcome, or why the surrogate could not pick."""
    rule: str
    """The rule in words, with its settings and the forgetting budget."""
    min_probability: float
    """The rule's threshold on P(a re-run within the budget) (objective.pick.min_probability)."""
    gain: Prediction | None = None
    """Predicted domain_gain at the point; None without a surrogate."""
    forgetting: Prediction | None = None
    probability_within_budget: float | None = None
    """P(a re-run at the point ends with forgetting <= budget) under the surrogate."""
    comparisons: list[Comparison] = Field(default_factory=list)
    """Every other distinct tried point against the pick, by first trial number."""
    fit: SurrogateFit | None = None
    """The surrogate's fit: points used, learned noise and length scales; None without one."""
    downstream: dict[str, DropPrediction] = Field(default_factory=dict)
    """Predicted drop of each budgeted downstream task at the point and P(a re-run within its budget)
    (objective.downstream_budget); empty without a downstream budget, and without a task of too few scored points
    (whose P is 0)."""
    bound_by: str | None = None
    """Which budget bound the surrogate's pick, as its reason says it (sweep.choice.downstream.bound_sentence); None
    without a downstream budget."""

    @model_validator(mode="after")
    def _surrogate_predicts(self) -> Pick:
        """A surrogate's pick is its predictions: best.json without them has lost what promotion copies."""
        if self.source is PickSource.SURROGATE:
            missing = [
                key
                for key in ("point", "gain", "forgetting", "probability_within_budget")
                if getattr(self, key) is None
            ]
            if missing:
                raise ValueError(f"a surrogate's pick carries its {', '.join(missing)}, not null")
        return self

    @property
    def indistinguishable(self) -> list[Comparison]:
        return [comparison for comparison in self.comparisons if comparison.indistinguishable]

    @property
    def gaining_more(self) -> list[Comparison]:
        """Tried points that gain measurably more than the pick: the rule passed them over (P below its threshold, or
        confirmed over the budget)."""
        return [comparison for comparison in self.comparisons if comparison.gains_more]


@dataclass(frozen=True)
class Candidate:
    lr_fraction: float
    domain_share: float
    mix: str
    """As the space writes it (a tried point: as its trial ran it)."""

    @classmethod
    def of(cls, row: TrialRow) -> Candidate:
        return cls(row.lr_fraction, row.domain_share, row.mix)


def rule_text(
    space: SearchSpace, config: PickConfig, budget: float, downstream_budget: Mapping[str, float] | None = None
) -> str:
    lr = space.lr_fraction
    if isinstance(lr, LRFractionRange):
        lrs = f"{LR_GRID} {'log-spaced' if lr.log else 'evenly spaced'} lr_fractions over [{lr.low:g}, {lr.high:g}]"
    else:
        lrs = f"the {len(lr)} listed lr_fractions"
    mixes = (
        f"{MIX_GRID} mixes over [{space.mix.low}, {space.mix.high}] (log general:domain)"
        if isinstance(space.mix, MixRange)
        else f"the {len(space.mix)} listed mixes"
    )
    downstream = "".join(
        f" and a drop on {task} within {limit:g}" for task, limit in sorted((downstream_budget or {}).items())
    )
    return (
        f"among {lrs} x {mixes}, plus every tried point, those whose re-run (a fresh seed, measured on fresh "
        f"validation text of the pool's size) ends with forgetting within the budget {budget:g}{downstream} with "
        f"probability >= "
        f"{config.min_probability:g} under the surrogate; of them the highest "
        f"lower-confidence domain_gain (predicted mean - {config.gain_lower_sd:g} sd); when none qualifies, or "
        f"with fewer than {MIN_DISTINCT_POINTS} distinct completed points, the best observed trial"
    )


def candidates(space: SearchSpace, rows: Sequence[TrialRow]) -> list[Candidate]:
    """The grid of the rule, then the tried points not on it, each point once."""
    lr = space.lr_fraction
    if isinstance(lr, LRFractionRange):
        spaced = np.geomspace if lr.log else np.linspace
        lrs = [float(value) for value in spaced(lr.low, lr.high, LR_GRID)]
    else:
        lrs = sorted(lr)
    if isinstance(space.mix, MixRange):
        logs = np.linspace(space.mix.low.log_ratio, space.mix.high.log_ratio, MIX_GRID)
        mixes = [ratio_of(float(value)) for value in logs]
    else:
        mixes = list(space.mix)
    found: dict[tuple[float, float], Candidate] = {}
    for value in lrs:
        for mix in mixes:
            found.setdefault(point_key(value, mix.domain_share), Candidate(value, mix.domain_share, str(mix)))
    for row in completed(rows):
        found.setdefault(point_key(row.lr_fraction, row.domain_share), Candidate.of(row))
    return list(found.values())


def make_pick(
    rows: Sequence[TrialRow], *, space: SearchSpace, budget: float, config: PickConfig, observed: TrialRow | None,
    downstream_budget: Mapping[str, float] | None = None,
) -> Pick:  # fmt: skip
    """The pick of a sweep's rows; `observed` is its best observed trial (sweep.choice.observed), the fallback."""
    return pick_with(
        fit_surrogate(rows, space), rows, space=space, budget=budget, config=config, observed=observed,
        downstream_budget=downstream_budget,
    )  # fmt: skip


def pick_with(
    surrogate: Surrogate | None,
    rows: Sequence[TrialRow],
    *,
    space: SearchSpace,
    budget: float,
    config: PickConfig,
    observed: TrialRow | None,
    excluded: Collection[tuple[float, float]] = (),
    downstream_budget: Mapping[str, float] | None = None,
) -> Pick:
    """The pick from an already fitted surrogate (None: too few points), as make_pick; `excluded`: point_keys no
    candidate may be (points whose confirmation trials ended over the budget); `downstream_budget`: the second
    budget, per task (sweep/choice/downstream.py), which `observed` must already respect."""
    rule = rule_text(space, config, budget, downstream_budget)
    used = completed(rows)
    if surrogate is None:
        reason = f"no surrogate: {distinct_points(used)} distinct completed point(s), it needs {MIN_DISTINCT_POINTS}"
        return _without_surrogate(observed, used, reason=reason, rule=rule, config=config)
    pool = [c for c in candidates(space, used) if point_key(c.lr_fraction, c.domain_share) not in excluded]
    lrs, shares = [c.lr_fraction for c in pool], [c.domain_share for c in pool]
    gain, forgetting = surrogate.predict(lrs, shares)
    probability = forgetting.probability_at_most(budget)
    drops = DropSurfaces.fit(used, space, downstream_budget) if downstream_budget else None
    drop_probability = drops.probabilities(lrs, shares) if drops is not None else {}
    joint = probability * np.prod(list(drop_probability.values()), axis=0) if drop_probability else probability
    eligible = joint >= config.min_probability
    budgets = "the budgets" if drops is not None else "the budget"
    lower_gain = gain.mean - config.gain_lower_sd * gain.sd
    lower = np.where(eligible, lower_gain, -np.inf)
    index = int(np.argmax(lower))
    # The candidates a budget could have held back: those the rule would rank above the pick, or all when none passed.
    above = lower_gain > lower[index] if eligible.any() else np.ones(len(pool), dtype=bool)
    bound_by = held_back_by(probability, drop_probability, above, config.min_probability, any_eligible=eligible.any())
    bound_by = bound_by if drops is not None else None
    clause = f", {bound_by}" if bound_by else ""
    if eligible.any():
        chosen, source = pool[index], PickSource.SURROGATE
        reason = (
            f"{int(eligible.sum())} of {len(pool)} candidate points are within {budgets} with probability >= "
            f"{config.min_probability:g}; this one has the highest lower-confidence domain_gain{clause}"
        )
    else:
        reason = (
            f"no candidate point is within {budgets} with probability >= {config.min_probability:g} "
            f"(the highest is {float(joint.max(initial=0.0)):.2f}){clause}"
        )
        if observed is None:
            return Pick(
                source=None, point=None, reason=f"{reason}, and no completed trial is", rule=rule,
                min_probability=config.min_probability,
            )  # fmt: skip
        chosen, source = Candidate.of(observed), PickSource.OBSERVED
        reason += f"; the best observed trial (trial {observed.number}) instead"
    described = _described(
        surrogate, chosen, source, used=used, budget=budget, reason=reason, rule=rule, excluded=excluded,
        min_probability=config.min_probability,
    )  # fmt: skip
    return _with_drops(described, drops, chosen, bound_by)


def _with_drops(pick: Pick, drops: DropSurfaces | None, chosen: Candidate, bound_by: str | None) -> Pick:
    """The pick with each budgeted task's predicted drop and probability within its budget at its point."""
    if drops is None:
        return pick
    at = ([chosen.lr_fraction], [chosen.domain_share])
    probabilities = drops.probabilities(*at)
    predictions = {
        task: DropPrediction(**Prediction.at(found, 0).model_dump(), probability_within_budget=float(probabilities[task][0]))
        for task, found in drops.predict(*at).items()
        if found is not None
    }
    comparisons = [
        comparison.model_copy(update={"probability_within_budgets": comparison.probability_within_budget * math.prod(
            float(p[0]) for p in drops.probabilities([comparison.point.lr_fraction], [comparison.point.domain_share]).values()
        )})
        for comparison in pick.comparisons
    ]  # fmt: skip
    return pick.model_copy(update={"downstream": predictions, "bound_by": bound_by, "comparisons": comparisons})


def _without_surrogate(
    observed: TrialRow | None, used: list[TrialRow], *, reason: str, rule: str, config: PickConfig
) -> Pick:
    threshold = config.min_probability
    if observed is None:
        reason = f"{reason}, and no completed trial is within the budget"
        return Pick(source=None, point=None, reason=reason, rule=rule, min_probability=threshold)
    point = _picked(observed.lr_fraction, observed.mix, observed.domain_share, used)
    reason = f"{reason}; the best observed trial (trial {observed.number})"
    return Pick(source=PickSource.OBSERVED, point=point, reason=reason, rule=rule, min_probability=threshold)


def _described(
    surrogate: Surrogate,
    chosen: Candidate,
    source: PickSource,
    *,
    used: list[TrialRow],
    budget: float,
    reason: str,
    rule: str,
    excluded: Collection[tuple[float, float]],
    min_probability: float,
) -> Pick:
    """The pick at `chosen` with the surrogate's predictions there and its comparison with every tried point."""
    share = chosen.domain_share
    gain, forgetting = surrogate.predict([chosen.lr_fraction], [share])
    return Pick(
        source=source,
        point=_picked(chosen.lr_fraction, chosen.mix, share, used),
        reason=reason,
        rule=rule,
        min_probability=min_probability,
        gain=Prediction.at(gain, 0),
        forgetting=Prediction.at(forgetting, 0),
        probability_within_budget=float(forgetting.probability_at_most(budget)[0]),
        comparisons=_comparisons(surrogate, (chosen.lr_fraction, share), used, budget=budget, excluded=excluded),
        fit=surrogate.fit,
    )


def _comparisons(
    surrogate: Surrogate,
    pick: tuple[float, float],
    used: list[TrialRow],
    *,
    budget: float,
    excluded: Collection[tuple[float, float]],
) -> list[Comparison]:
    tried: dict[tuple[float, float], TrialRow] = {}
    for row in sorted(used, key=lambda row: row.number):
        tried.setdefault(point_key(row.lr_fraction, row.domain_share), row)
    others = [row for key, row in tried.items() if key != point_key(*pick)]
    if not others:
        return []
    mean, smooth = surrogate.gain_difference(pick, [(row.lr_fraction, row.domain_share) for row in others])
    gain_fit = surrogate.fit.domain_gain
    measured = seed_noise(point_summaries(used))
    noise = max(gain_fit.noise_sd, measured.domain_gain_sd if measured is not None else 0.0)
    sd = np.sqrt(smooth**2 + 2.0 * noise**2 + 2.0 * gain_fit.text_sd**2)
    _, forgetting = surrogate.predict([row.lr_fraction for row in others], [row.domain_share for row in others])
    probability = forgetting.probability_at_most(budget)
    return [
        Comparison(
            point=_picked(row.lr_fraction, row.mix, row.domain_share, used),
            gain_difference=float(difference),
            low=float(difference - Z90 * spread),
            high=float(difference + Z90 * spread),
            indistinguishable=bool(difference - Z90 * spread <= 0.0 <= difference + Z90 * spread),
            probability_within_budget=float(p),
            excluded=point_key(row.lr_fraction, row.domain_share) in excluded,
        )
        for row, difference, spread, p in zip(others, mean, sd, probability)
    ]


def _picked(lr_fraction: float, mix: str, domain_share: float, used: list[TrialRow]) -> PickedPoint:
    key = point_key(lr_fraction, domain_share)
    here = [row for row in used if point_key(row.lr_fraction, row.domain_share) == key]
    return PickedPoint(
        lr_fraction=lr_fraction,
        mix=mix,
        domain_share=domain_share,
        trials=sorted(row.number for row in here),
        measured_gain=_mean([row.domain_gain for row in here]),
        measured_forgetting=_mean([row.forgetting for row in here]),
    )


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None
