"""What the law says at a target, as a record (kept in ladder.json, the law fit report and a ladder's plan): the
answer by the pick's rule and the mean-constrained point beside it, the 90 % intervals with the share of each that
the noise, the spread between forms and the form's own error make, the discrepancy carried, and the refusal when
there is one. sweep.law.predict makes it.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from sweep.law.forms import FormName
from sweep.law.optimum import Point, Refusal, SearchBox
from sweep.study.config import PickConfig
from sweep.target.scale import TargetScale
from train_entry.config import StrictConfig

SOURCES_SUM = 1e-6
"""A record's shares of an interval's variance sum to one within this."""


class Sources(StrictConfig):
    """How much of an interval's spread each source of uncertainty makes: shares of its variance over the refits and
    their discrepancy draws, summing to one."""

    noise: float = Field(ge=0.0, le=1.0)
    """Within each form's refits: what the replicates' noise moves, through the bootstrap."""
    forms: float = Field(ge=0.0, le=1.0)
    """Between the credible forms' refits: what choosing among the forms leaves open."""
    discrepancy: float = Field(ge=0.0, le=1.0)
    """The form's error beyond the noise (sweep.law.discrepancy), at the target's distance from the rungs."""

    @model_validator(mode="after")
    def _shares(self) -> Sources:
        total = self.noise + self.forms + self.discrepancy
        if abs(total - 1.0) > SOURCES_SUM:
            raise ValueError(f"the shares of an interval's variance sum to 1, got {total!r}")
        return self


class Interval(StrictConfig):
    low: float
    high: float
    sources: Sources | None = None
    """What makes its width (None: not measured, as along a plan's trajectory)."""

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


class Intervals(StrictConfig):
    """Central intervals over the bootstrap refits of every credible form, each with its draw of the discrepancy, at
    the prediction's level."""

    level: float
    lr_fraction: Interval
    """Of the refits' own (mean-constrained) optima."""
    domain_share: Interval
    domain_gain: Interval
    """Of the refits' laws at the promoted point."""
    forgetting: Interval


class DiscrepancyAt(StrictConfig):
    """The form's error the answer carries at its target (sweep.law.discrepancy)."""

    distance: float = Field(ge=0.0)
    """Decades of N from the target to the nearest rung."""
    forgetting: float = Field(ge=0.0)
    """Relative sd of forgetting there: at the rungs (within), and growing with the distance."""
    domain_gain: float = Field(ge=0.0)
    growth_known: bool
    """The held-out rungs measured how the error grows; when not, only the error at the rungs is carried, and a
    target beyond them is refused."""


class FormAnswer(StrictConfig):
    """One form's own answer at the target, beside the others."""

    form: FormName
    weight: float = Field(ge=0.0, le=1.0)
    optimum: Point | None
    """Its full fit's mean-constrained optimum (None: no point keeps the budget)."""
    toward: list[str]
    refits: int = Field(ge=0)
    """Refits drawn from this form."""


class AtEdge(StrictConfig):
    """The rule's own point, found beyond the searched box by a gain no trial could tell apart from the best point
    inside it: the answer is that best point inside, at the box's edge (sweep.law.predict)."""

    beyond: Point
    """The rule's point beyond the box, as a plan would write it."""
    gains_more: float = Field(ge=0.0)
    """Its lower-confidence domain_gain over the answer's (0 when it gains less)."""
    material: float = Field(gt=0.0)
    """What would have counted: MATERIAL x the replicates' noise and the form's error in domain_gain together
    (sweep.law.lattice)."""


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
    """P(forgetting <= budget) at the optimum: the share of refits whose law, with its draw of the discrepancy, keeps
    it there."""
    lower_gain: float | None = None
    """The refits' mean domain_gain at the optimum (with their discrepancy draws) less pick.gain_lower_sd standard
    deviations."""
    mean_optimum: Point | None
    """The mean-constrained point: the highest domain_gain of the answer's mean law with forgetting at most the
    budget, where P is near one half (shown beside the optimum, never promoted)."""
    mean_within_budget: float | None = Field(None, ge=0.0, le=1.0)
    best_probability: float | None = Field(None, ge=0.0, le=1.0)
    """The largest P anywhere the optimum was looked for."""
    inside_probability: float | None = Field(None, ge=0.0, le=1.0)
    """The largest P at any point inside the searched box."""
    plain_inside_probability: float | None = Field(None, ge=0.0, le=1.0)
    """The same without the discrepancy, the refits alone: what the form's error costs."""
    toward: list[str]
    """Directions in which the answer lies outside the box."""
    at_edge: AtEdge | None = None
    """Set when the rule's own point lay beyond the box by no material gain and the answer is the best inside."""
    intervals: Intervals | None
    discrepancy: DiscrepancyAt | None = None
    forms: list[FormAnswer] = Field(default_factory=list)
    refits: int = Field(ge=0)
    refits_outside: int = Field(ge=0)
    """Refits (without a discrepancy draw: the runs' say) whose best point beyond the box gains more over their best
    inside it than the replicates' noise and the form's error in domain_gain account for (sweep.law.lattice)."""
    refits_without: int = Field(ge=0)
    """Refits with no point that keeps the budget, or whose fit failed."""
    refusal: Refusal | None

    @property
    def credible(self) -> bool:
        return self.refusal is None
