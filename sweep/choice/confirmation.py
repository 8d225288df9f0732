"""Confirmation: the pick run again at seeds no trial of the sweep used, before anything is promoted.

A pick between tried points is a point no trial ran, and one at a tried point reproduces its own trial on
a deterministic machine: neither says whether the pick holds on a run the sweep never saw. So after the
searched trials and their replicates, the pick runs `seeds` more full-budget trials at fresh seeds (never
pruned, enqueued in the study like replicates, so a killed driver resumes them), each round's measured on a
validation draw of its own, text no other trial was measured on. The pick is **confirmed** when every one of them
completes and their mean forgetting is within the budget. When it is not, the surrogate's next pick (fitted to the
pool's trials: a confirmation's figures are on another text and do not enter it), the points already confirmed over
the budget excluded, is confirmed next: at most `candidates` points in all; then the sweep says it found no
confirmed point. Each round's mean is also set against the interval predicted for it, and a mean outside says so.

Everything here is a pure function of the trials' rows, so a rerun after a kill computes the same rounds.
"""

from __future__ import annotations

import enum
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import Field

from sweep.choice.feasible import is_feasible
from sweep.choice.observed import best_observed
from sweep.choice.pick import Pick, Prediction, pick_with
from sweep.choice.surrogate import Z90, fit_surrogate, point_key
from sweep.space import SearchSpace
from sweep.study.config import ConfirmationConfig, PickConfig
from sweep.study.record import Status
from sweep.study.row import TrialRow
from sweep.study.study import SweepPlan
from train_entry.config import SEED_LIMIT, StrictConfig
from train_entry.mix import MixRatio


@dataclass(frozen=True)
class Setting:
    """What the confirmation rule needs from the sweep's plan, passed apart so that the rule needs no study."""

    space: SearchSpace
    forgetting_budget: float
    pick: PickConfig
    config: ConfirmationConfig
    first_seed: int
    """The first seed no other trial uses (SweepPlan.first_confirmation_seed)."""
    downstream_budget: Mapping[str, float] = field(default_factory=dict)
    """Per downstream task, the largest drop accepted (objective.downstream_budget): a confirmed point's trials' mean
    drop must be within it too."""

    @classmethod
    def of(cls, plan: SweepPlan) -> Setting:
        return cls(
            space=plan.space,
            forgetting_budget=plan.forgetting_budget,
            pick=plan.pick,
            config=plan.search.confirmation,
            first_seed=plan.first_confirmation_seed,
            downstream_budget=plan.downstream_budget,
        )

    def seeds(self, round_: int) -> list[int]:
        start = self.first_seed + round_ * self.config.seeds
        return [(start + k) % SEED_LIMIT for k in range(self.config.seeds)]


class Outcome(str, enum.Enum):
    CONFIRMED = "confirmed"
    """A point's confirmation trials all completed with mean forgetting within the budget."""
    NOT_FOUND = "not_found"
    """Every point confirmed ended over the budget (or nothing could be picked)."""
    PENDING = "pending"
    """Confirmation trials have not all run yet (an interrupted sweep)."""
    OFF = "off"
    """search.confirmation.seeds is 0."""


class Measured(StrictConfig):
    """Mean and sample standard deviation over a point's confirmation trials."""

    mean: float
    sd: float | None
    """None with one trial."""


class Against(str, enum.Enum):
    """Where a confirmation's mean fell against the 90 % interval predicted for it."""

    INSIDE = "inside"
    ABOVE = "above"
    BELOW = "below"


class ConfirmedPoint(StrictConfig):
    """One round: a pick, what the surrogate predicted for it, and what its confirmation trials measured."""

    round: int
    lr_fraction: float
    mix: str
    domain_share: float
    trials: list[int]
    seeds: list[int]
    predicted_gain: float | None
    predicted_forgetting: float | None
    """The pick's surrogate means when it was chosen (None: a pick at the best observed trial without a surrogate)."""
    probability_within_budget: float | None
    gain: Measured | None
    forgetting: Measured | None
    """None when no confirmation trial completed (all diverged or failed)."""
    within_budget: bool
    text: str | None = None
    """The draw its trials' figures were measured on (text no other trial was measured on)."""
    gain_interval: tuple[float, float] | None = None
    """90 % interval predicted for the mean of its trials' domain_gain on their draw: the surface's uncertainty, the
    seed noise over their number, the pool's text error and the draw's own (its trials' text error over its
    documents). None without a prediction or a completed trial."""
    forgetting_interval: tuple[float, float] | None = None
    gain_against: Against | None = None
    """Where the measured mean fell against gain_interval."""
    forgetting_against: Against | None = None
    drops: dict[str, Measured] = Field(default_factory=dict)
    """Each budgeted downstream task's drop over its trials (objective.downstream_budget); within_budget requires each
    mean within its task's budget."""


class Confirmation(StrictConfig):
    """best.json's record of the confirmation: every round, and whether a point held."""

    outcome: Outcome
    reason: str
    rounds: list[ConfirmedPoint] = Field(default_factory=list)

    @property
    def confirmed(self) -> ConfirmedPoint | None:
        return self.rounds[-1] if self.outcome is Outcome.CONFIRMED else None


OFF = Confirmation(outcome=Outcome.OFF, reason="search.confirmation.seeds is 0")
"""The record of a sweep that confirms nothing."""


@dataclass(frozen=True)
class Due:
    """Confirmation trials to enqueue: `seeds` at `params`, round `round`."""

    round: int
    params: dict
    seeds: list[int]


@dataclass(frozen=True)
class State:
    """Where confirmation stands: its record, the pick to report, and the trials still due (if any)."""

    confirmation: Confirmation
    pick: Pick
    due: Due | None


def confirmation_state(rows: Sequence[TrialRow], setting: Setting) -> State:
    """Replays the rounds over the rows: the confirmed point, the next round due, or why there is none.

    Enqueue what it says is due only once the searched trials and the replicates have finished: before, the
    pick it confirms could still change. The pick's fallback is the best observed trial of the searched trials."""
    searched = [row for row in rows if row.confirms is None]
    observed = best_observed(searched, setting.forgetting_budget, setting.downstream_budget)
    config = setting.config
    if config.seeds == 0:
        pick = _pick(rows, setting, observed, excluded=set())
        return State(OFF, pick, None)
    rounds: list[ConfirmedPoint] = []
    for round_ in range(config.candidates):
        before = [*searched, *(row for row in rows if row.confirms is not None and row.confirms < round_)]
        excluded = {point_key(point.lr_fraction, point.domain_share) for point in rounds}
        pick = _pick(before, setting, observed, excluded=excluded)
        if pick.point is None or point_key(pick.point.lr_fraction, pick.point.domain_share) in excluded:
            reason = f"round {round_}: nothing left to confirm ({pick.reason})"
            return State(Confirmation(outcome=Outcome.NOT_FOUND, reason=reason, rounds=rounds), pick, None)
        trials = sorted((row for row in rows if row.confirms == round_), key=lambda row: row.number)
        if len(trials) < config.seeds or not all(row.finished for row in trials):
            due = _due(pick, trials, round_, setting)
            reason = f"round {round_}: {sum(row.finished for row in trials)} of {config.seeds} confirmation trials ran"
            return State(Confirmation(outcome=Outcome.PENDING, reason=reason, rounds=rounds), pick, due)
        rounds.append(_measured(pick, trials, round_, setting))
        if rounds[-1].within_budget:
            reason = f"round {round_}: {_said(rounds[-1], setting)}"
            return State(Confirmation(outcome=Outcome.CONFIRMED, reason=reason, rounds=rounds), pick, None)
    reason = f"none of the {len(rounds)} point(s) confirmed (search.confirmation.candidates) held: " + "; ".join(
        _said(point, setting) for point in rounds
    )
    return State(Confirmation(outcome=Outcome.NOT_FOUND, reason=reason, rounds=rounds), pick, None)


def _pick(rows: Sequence[TrialRow], setting: Setting, observed: TrialRow | None, *, excluded: set) -> Pick:
    surrogate = fit_surrogate(rows, setting.space)
    return pick_with(
        surrogate, rows, space=setting.space, budget=setting.forgetting_budget, config=setting.pick, observed=observed,
        excluded=excluded, downstream_budget=setting.downstream_budget,
    )  # fmt: skip


def _due(pick: Pick, trials: list[TrialRow], round_: int, setting: Setting) -> Due | None:
    """The seeds of the round not enqueued yet, at the pick's point; None when all are (they are running)."""
    missing = [seed for seed in setting.seeds(round_) if seed not in {row.seed for row in trials}]
    if not missing:
        return None
    params = setting.space.params_of(pick.point.lr_fraction, MixRatio.parse(pick.point.mix))
    return Due(round=round_, params=params, seeds=missing)


def _measured(pick: Pick, trials: list[TrialRow], round_: int, setting: Setting) -> ConfirmedPoint:
    budget = setting.forgetting_budget
    ended = [row for row in trials if row.status is Status.COMPLETED and _finite(row)]
    gain = _spread([row.domain_gain for row in ended])
    forgetting = _spread([row.forgetting for row in ended])
    scored = {task: [row.drop(task) for row in ended] for task in setting.downstream_budget}
    drops = {task: _spread(values) for task, values in scored.items() if None not in values}
    # Every completed trial scored on every budgeted task, each task's mean drop within its budget.
    drops_within = len(drops) == len(scored) and all(
        drop is not None and is_feasible(drop.mean, setting.downstream_budget[task]) for task, drop in drops.items()
    )
    gain_interval = _interval(pick.gain, ended, [row.gain_text_error for row in ended])
    forgetting_interval = _interval(pick.forgetting, ended, [row.forgetting_text_error for row in ended])
    return ConfirmedPoint(
        round=round_,
        lr_fraction=pick.point.lr_fraction,
        mix=pick.point.mix,
        domain_share=pick.point.domain_share,
        trials=[row.number for row in trials],
        seeds=[row.seed for row in trials if row.seed is not None],
        predicted_gain=pick.gain.mean if pick.gain else None,
        predicted_forgetting=pick.forgetting.mean if pick.forgetting else None,
        probability_within_budget=pick.probability_within_budget,
        gain=gain,
        forgetting=forgetting,
        # A confirmation trial that diverged or failed measured no end: the point is not confirmed.
        within_budget=len(ended) == len(trials)
        and forgetting is not None
        and is_feasible(forgetting.mean, budget)
        and drops_within,
        drops={task: drop for task, drop in drops.items() if drop is not None},
        text=ended[0].text if ended else None,
        gain_interval=gain_interval,
        forgetting_interval=forgetting_interval,
        gain_against=_against(gain, gain_interval),
        forgetting_against=_against(forgetting, forgetting_interval),
    )


def _interval(prediction: Prediction | None, ended: list[TrialRow], errors: list[float | None]) -> tuple | None:
    """The 90 % interval predicted for the mean of `ended`'s figures on their draw: the surface's uncertainty, the seed
    noise over their number, the pool's text error and the draw's (the root mean square of `errors`, each trial's
    text error on it) (ConfirmedPoint.gain_interval)."""
    if prediction is None or not ended:
        return None
    measured = [error for error in errors if error is not None and math.isfinite(error)]
    draw = math.sqrt(math.fsum(error**2 for error in measured) / len(measured)) if measured else 0.0
    sd = math.sqrt(prediction.sd**2 + prediction.noise_sd**2 / len(ended) + prediction.text_sd**2 + draw**2)
    return (prediction.mean - Z90 * sd, prediction.mean + Z90 * sd)


def _against(measured: Measured | None, interval: tuple[float, float] | None) -> Against | None:
    if measured is None or interval is None:
        return None
    if measured.mean > interval[1]:
        return Against.ABOVE
    return Against.BELOW if measured.mean < interval[0] else Against.INSIDE


def _said(point: ConfirmedPoint, setting: Setting) -> str:
    """The round in a sentence that says each budget's measure against it: the forgetting's, and each task's drop."""
    budget = setting.forgetting_budget
    where = f"{point.lr_fraction:.3g} @ {point.mix}"
    if point.forgetting is None:
        return f"{where}: no confirmation trial completed"
    if not setting.downstream_budget:
        verdict = "within" if point.within_budget else "over"
        return f"{where}: forgetting {_mean_sd(point.forgetting)} at fresh seeds, {verdict} the budget {budget:g}"
    parts = [f"forgetting {_mean_sd(point.forgetting)} ({_side(point.forgetting.mean, budget)} its budget {budget:g})"]
    for task, limit in sorted(setting.downstream_budget.items()):
        drop = point.drops.get(task)
        parts.append(
            f"{task} drop {_mean_sd(drop)} ({_side(drop.mean, limit)} its budget {limit:g})"
            if drop is not None
            else f"{task} not scored on every trial (over its budget {limit:g})"
        )
    verdict = "within the budgets" if point.within_budget else "over a budget"
    return f"{where}: {', '.join(parts)} at fresh seeds, {verdict}"


def _mean_sd(measured: Measured) -> str:
    return f"{measured.mean:.4f}" + (f" ± {measured.sd:.4f}" if measured.sd is not None else "")


def _side(value: float, limit: float) -> str:
    return "within" if is_feasible(value, limit) else "over"


def _spread(values: list[float]) -> Measured | None:
    if not values:
        return None
    return Measured(mean=statistics.fmean(values), sd=statistics.stdev(values) if len(values) > 1 else None)


def _finite(row: TrialRow) -> bool:
    return all(v is not None and math.isfinite(v) for v in (row.domain_gain, row.forgetting))
