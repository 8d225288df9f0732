"""The sweep's trials by distinct point and validation text: how often each point was measured to the end on a text,
the mean and the seed-to-seed spread of its domain_gain and forgetting there, and that spread pooled over the points
measured more than once on the same text (the noise below which two trials on it cannot be told apart). Figures on
different texts are never pooled: one text's offset is not seed noise."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

from sweep.choice.surrogate import point_key
from sweep.study.record import Status
from sweep.study.row import POOL, TrialRow
from train_entry.config import StrictConfig


class PointSummary(StrictConfig):
    """One (lr_fraction, mix) over its completed trials measured on one text: the main one and its replicates on the
    pool, or a confirmation round's trials on its draw."""

    lr_fraction: float
    mix: str
    text: str
    """The validation text every one of them was measured on (TrialRow.text)."""
    trials: list[int]
    """Numbers of the completed trials at this point on this text, one per seed, in order."""
    domain_gain_mean: float
    domain_gain_sd: float | None
    """Sample standard deviation over the trials; None for a point measured once."""
    forgetting_mean: float
    forgetting_sd: float | None

    @property
    def n(self) -> int:
        return len(self.trials)


class SeedNoise(StrictConfig):
    """The seed-to-seed spread pooled over the points measured more than once on one text."""

    text: str
    points: int
    degrees_of_freedom: int
    """Sum of (n - 1) over those points: how many independent differences the spread rests on."""
    domain_gain_sd: float
    forgetting_sd: float


def point_summaries(rows: Iterable[TrialRow]) -> list[PointSummary]:
    """Every distinct (point, text) of the completed trials, the pool's first, then the highest mean domain_gain."""
    by_point: dict[tuple, dict] = {}
    for row in sorted(rows, key=lambda row: row.number):
        if not _measured(row):
            continue
        group = by_point.setdefault((point_key(row.lr_fraction, row.domain_share), row.text), {})
        group.setdefault(row.seed if row.seed is not None else f"trial {row.number}", row)  # one per seed
    summaries = [
        PointSummary(
            lr_fraction=group[0].lr_fraction,
            mix=group[0].mix,
            text=group[0].text,
            trials=[row.number for row in group],
            domain_gain_mean=statistics.fmean(row.domain_gain for row in group),
            domain_gain_sd=_sd([row.domain_gain for row in group]),
            forgetting_mean=statistics.fmean(row.forgetting for row in group),
            forgetting_sd=_sd([row.forgetting for row in group]),
        )
        for group in (list(seeds.values()) for seeds in by_point.values())
    ]
    return sorted(summaries, key=lambda point: (point.text != POOL, -point.domain_gain_mean, point.trials[0]))


def seed_noise(points: Iterable[PointSummary], *, text: str = POOL) -> SeedNoise | None:
    """The pooled standard deviation on `text`, sqrt(sum (n - 1) sd^2 / sum (n - 1)) over its points; None with no
    point measured twice on it."""
    repeated = [point for point in points if point.n > 1 and point.text == text]
    if not repeated:
        return None
    freedom = sum(point.n - 1 for point in repeated)

    def pooled(sds: list[float]) -> float:
        return math.sqrt(sum((point.n - 1) * sd**2 for point, sd in zip(repeated, sds)) / freedom)

    return SeedNoise(
        text=text,
        points=len(repeated),
        degrees_of_freedom=freedom,
        domain_gain_sd=pooled([point.domain_gain_sd for point in repeated]),
        forgetting_sd=pooled([point.forgetting_sd for point in repeated]),
    )


def replicates_note(rows: Iterable[TrialRow], *, top: int) -> str | None:
    """What the replicates did when fewer distinct points could be re-run than replicates.top (`top`) asks for:
    the points there were took the remaining replicates at further seeds (see sweep.choice.replicates.replicates_due)."""
    replicates = [row for row in rows if row.replicate_of is not None]
    points = sorted({row.replicate_of for row in replicates})
    if not replicates or len(points) >= top:
        return None
    seeds = ", ".join(str(seed) for seed in sorted({row.seed for row in replicates if row.seed is not None}))
    trials = ", ".join(map(str, points))
    return (
        f"replicates.top is {top} but only {len(points)} distinct point(s) could be re-run (trial(s) {trials}): "
        f"the {len(replicates)} replicate(s) re-run them at seeds {seeds}"
    )


def seed_noises(points: list[PointSummary]) -> list[SeedNoise]:
    """seed_noise on each text some point was measured twice on, the pool's first."""
    texts = dict.fromkeys(point.text for point in points if point.n > 1)
    return [noise for text in texts if (noise := seed_noise(points, text=text)) is not None]


def _measured(row: TrialRow) -> bool:
    return (
        row.status is Status.COMPLETED
        and row.text is not None
        and all(value is not None and math.isfinite(value) for value in (row.domain_gain, row.forgetting))
    )


def _sd(values: list[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None
