"""The full run's validation sets: general, domain and (with a non-English share) non-English held-out text, each
evaluated apart, and how their losses give the two the proxies measured.

A proxy's general validation loss is over general and non-English sequences blended (1 - share) : share
(train_entry.data.blend.build_validation_sets); its mean is that mix of the two sets' means, which is how
side_losses combines the full run's. The entry (train_entry/megatron/evaluation.py) and the watch of any job's log
(train_entry/fullrun/evaluations.py) both measure through it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from train_entry.config import StrictConfig
from train_entry.trial_config import BaseLosses, Metrics

Side = Literal["general", "domain", "non_english"]


class ValidationSet(StrictConfig):
    side: Side
    """Which of the proxies' losses the set's loss goes into: the domain loss, or the general one (non_english
    blended into it at the point's share)."""
    prefix: str = Field(min_length=1)
    """A Megatron indexed dataset (.bin/.idx without the suffix) on the cluster's file system."""


def check_sides(sides: Sequence[Side], non_english_share: float) -> None:
    """ValueError unless `sides` name general and domain once each, and non_english once exactly when the share is
    above 0: the sets the proxies' two losses are made of."""
    if len(set(sides)) != len(sides) or not {"general", "domain"} <= set(sides):
        raise ValueError(f"the sets must name general and domain once each (non_english at most once), got {sides}")
    if ("non_english" in sides) != (non_english_share > 0):
        raise ValueError(
            f"a non_english set goes with a non-English share and only with one, got {list(sides)} and "
            f"non_english_share {non_english_share}"
        )


def side_losses(sides: Sequence[Side], losses: Sequence[float], non_english_share: float) -> tuple[float, float]:
    """(domain loss, general loss as the proxies measure it) from each set's loss, in `sides`' order."""
    by_side = dict(zip(sides, losses, strict=True))
    share = non_english_share
    general = by_side["general"] if share == 0 else (1 - share) * by_side["general"] + share * by_side["non_english"]
    return by_side["domain"], general


def evaluation_metrics(base: BaseLosses, *, step: int, tokens_seen: int, domain: float, general: float) -> Metrics:
    """One evaluation measured against the base's losses. An evaluation has no training loss or LR of its own (the
    step's log line carries those): its figures are the validation losses' only."""
    return Metrics.measure(
        base=base, domain_loss=domain, general_loss=general, step=step, tokens_seen=tokens_seen, train_loss=math.nan,
        lr=math.nan,
    )  # fmt: skip
