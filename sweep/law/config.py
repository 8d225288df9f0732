"""How a law is fitted and resampled (the spec's `ladder.law:`, and `sweep law fit`'s options): the law's own
settings, owned here and assembled into the spec by sweep.ladder.config."""

from __future__ import annotations

from pydantic import Field

from train_entry.config import Seed, StrictConfig

PARALLEL_WORK = 400_000
"""Rows times refits from which the forms' fits and the refits go to worker processes: spawning two and importing
the law takes a few seconds, which 432 rows' 200 refits (about 0.05 s each) do not repay and 6,432 rows' (about
0.25 s each) do."""
LEVEL = 0.90
"""Of every interval: the surrogate's 90 %, so that the sweep's, the ladder's and the law's intervals read alike."""


class LawSettings(StrictConfig):
    """How a law is fitted and how much its prediction is resampled."""

    starts: int = Field(16, ge=1, le=1000)
    """Starting points per loss for the full fit: on the tests' synthetic ladder three in four starts or more find
    the best optimum's basin, so 16 leave next to no chance of missing it."""
    huber_scale: float = Field(1e-3, gt=0.0, le=1.0)
    """Residuals beyond this (in relative change: 1e-3 is 0.1 % of the base's loss) count linearly: the seed-to-seed
    spread of forgetting on the bundled corpora, sd 0.0010 (0.0005 in domain_gain; BENCHMARKS.md, the default
    spec's replicates)."""
    refits: int = Field(200, ge=0, le=10_000)
    """Bootstrap refits behind the intervals: 200 put a 90 % interval's ends on 10 refits each."""
    workers: int = Field(2, ge=1, le=64)
    """Processes a large table's forms and bootstrap refits are fitted in (PARALLEL_WORK): the 2 cores the tool is
    sized for (6,500 rows and 200 refits within a minute, BENCHMARKS.md); 1 fits them in this process. The fits
    and refits are the same whatever the number."""
    refit_starts: int = Field(2, ge=1, le=1000)
    """Starts per loss of a refit: the full fit's parameters and one Latin-hypercube point."""
    seed: Seed = 0
    """Seeds the starts and the resampling: the same table gives the same answer."""
    level: float = Field(LEVEL, gt=0.0, lt=1.0)
    outside_limit: float = Field(0.10, ge=0.0, le=1.0)
    """A larger share of refits with their optimum outside the searched box (or none at all) refuses the
    prediction."""

    def processes(self, rows: int) -> int:
        """Worker processes for a table of `rows`: `workers` once rows x refits repay spawning them, else 1."""
        return self.workers if rows * self.refits >= PARALLEL_WORK else 1
