"""The study's settings: the spec's `search` section (sampler, pruner, budget of trials, replicates, confirmation)
and its `objective.pick`, which the study stores with its plan (sweep/study/study.py's SweepPlan) and the choice reads.

Apart from the rules that read them (sweep/choice/) because the spec and the study read them, and every trial
process loads those: the rules bring the surrogate's scipy and scikit-learn (~1.5 s of CPU at each process's start).
"""

from __future__ import annotations

from pydantic import Field

from sweep.study.pruning import ForgettingGuardConfig, MedianPrunerConfig, PrunerConfig
from sweep.study.sampling import SamplerConfig, TpeSamplerConfig
from train_entry.config import Seed, StrictConfig

MAX_TRIALS = 10_000
"""Upper bound of a sweep's trials (and a grid's points): far above any proxy sweep, far below a typo."""


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


class ReplicatesConfig(StrictConfig):
    """Which points are re-run with other seeds after the planned trials, and how often."""

    top: int = Field(2, ge=0, le=100)
    """Distinct points re-run: the highest final domain_gain among the feasible completed trials,
    then the least-forgetting completed ones; 0 turns replicates off. Two by default: the optimum
    and its runner-up are what the pick is decided between, and one extra seed each gives two
    pairs, a first measure of the seed-to-seed spread where it matters. On the default spec that is
    2 x 205 k tokens, 8 % of a 25-point grid's 5.1 M: the decision-quality target gives the whole
    sweep 40 %, and each further point or seed costs another 4 %."""
    seeds: int = Field(1, ge=1, le=100)
    """Extra seeds per point (proxy.seed + 1, + 2, ...), each one full-budget trial that is never pruned."""

    @property
    def trials(self) -> int:
        """Replicate trials a sweep ends with: with fewer distinct points to re-run than `top`, those
        there are take the remaining seeds, so the count never depends on how the trials turned out."""
        return self.top * self.seeds


class SearchConfig(StrictConfig):
    """How the sweep searches its space: the sampler, the pruner and the budget of trials."""

    sampler: SamplerConfig = TpeSamplerConfig()
    """Optuna's sampler, by name (`tpe`) or `{type: tpe}` (sweep/study/sampling.py); grid runs every combination of the
    listed space values once."""
    seed: Seed = 0
    """The sampler's seed: the same seed and trials propose the same points."""
    num_trials: int = Field(16, gt=0, le=MAX_TRIALS)
    """Trials the sampler proposes (the sweep ends with these and its replicates); a grid fills in its own
    count (every combination) when left out."""
    pruner: PrunerConfig = MedianPrunerConfig()
    forgetting_guard: ForgettingGuardConfig | None = ForgettingGuardConfig()
    """Stops a trial predicted to end far over the forgetting budget; null turns it off."""
    replicates: ReplicatesConfig = ReplicatesConfig()
    """After the num_trials trials, the best points re-run with other seeds (`{top: 0}`: none)."""
    confirmation: ConfirmationConfig = ConfirmationConfig()
    """After the replicates, the pick re-run at fresh seeds before it may be promoted (`{seeds: 0}`: none)."""
