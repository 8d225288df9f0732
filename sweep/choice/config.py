"""The choice's settings: the spec's `objective.pick` and `search.confirmation`, and what the confirmation rule takes
from a sweep's plan.

Apart from the rules themselves (sweep/choice/pick.py, sweep/choice/confirmation.py) because the spec and the study
read them, and every trial process loads those: the rules bring the surrogate's scipy and scikit-learn (~1.5 s of
CPU at each process's start).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from sweep.spec.space import SearchSpace
from train_entry.config import SEED_LIMIT, StrictConfig


class PickConfig(StrictConfig):
    """The rule that turns the surrogate into one recommended point (`objective.pick` in the spec)."""

    min_probability: float = Field(0.9, gt=0.0, lt=1.0)
    """Smallest probability, under the surrogate, that a re-run at a candidate ends within the forgetting
    budget; 0.9 keeps the pick off the budget's edge, where half of all re-runs would land over it."""
    gain_lower_sd: float = Field(1.0, ge=0.0, le=5.0)
    """Candidates are ranked by predicted domain_gain less this many standard deviations of the surface:
    1 prefers a point the trials pin down to a slightly higher guess in a gap between them."""


class ConfirmationConfig(StrictConfig):
    """How the pick is confirmed at fresh seeds (`search.confirmation` in the spec)."""

    seeds: int = Field(2, ge=0, le=20)
    """Full-budget trials at the pick, each at a seed no trial of the sweep used; 0 turns confirmation off
    (and `sweep promote` then needs --unconfirmed). Two give a mean and a first spread of the pick's own
    re-runs; on the default spec they cost 2 x 205 k tokens, 8 % of a 25-point grid's tokens."""
    candidates: int = Field(2, ge=1, le=10)
    """Most points confirmed: a pick confirmed over the budget gives way to the next pick of the refitted
    surrogate until this many were tried; each further point costs `seeds` more trials."""


@dataclass(frozen=True)
class Setting:
    """What the confirmation rule needs from the sweep's plan, passed apart so that the rule needs no study."""

    space: SearchSpace
    budget: float
    pick: PickConfig
    config: ConfirmationConfig
    first_seed: int
    """The first seed no other trial uses (SweepPlan.first_confirmation_seed)."""

    def seeds(self, round_: int) -> list[int]:
        start = self.first_seed + round_ * self.config.seeds
        return [(start + k) % SEED_LIMIT for k in range(self.config.seeds)]
