"""The forgetting watch and W&B run a plan's job carries (train_entry/fullrun/job_watch.py), from the plan.

The watch reads the plan's validation sets in their order, blends the general side with non-English at the promoted
point's share as the proxies did, and holds each evaluation to the plan's predicted trajectory. A rehearsal trains a
few thousand tokens, not the plan's trillion: its watch holds the toy run to the same trajectory with its tokens
scaled to the toy run's (fractions of the run kept), and its forced-overshoot drill holds it to a bound no loss can
stay under, so the watch trips at its second evaluation and the stop is rehearsed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from sweep.promote.errors import PromotionError
from sweep.promote.plan.plan import Plan
from sweep.run.tracking import TrackingError, resolve_wandb
from train_entry.fullrun.config import JobWandb
from train_entry.fullrun.evaluations import WatchConfig
from train_entry.fullrun.watch import PredictedPoint, PredictedTrajectory

FORCED_BOUND = -1.0
"""Forgetting is general / base general - 1 > -1 for any loss above 0: a bound of -1 is exceeded by every evaluation."""


def watch_config(
    plan: Plan, *, stop_on_forgetting: bool, tokens_per_iteration: int | None = None, run_tokens: int | None = None
) -> WatchConfig:
    """The plan's watch; with `run_tokens` (a rehearsal's), the prediction's tokens scaled to that run's."""
    prediction = plan.prediction
    if prediction is not None and run_tokens is not None:
        scale = run_tokens / plan.tokens
        points = [point.model_copy(update={"tokens": point.tokens * scale}) for point in prediction.points]
        prediction = prediction.model_copy(update={"points": points})
    return WatchConfig(
        sets=[item.side for item in plan.validation],
        non_english_share=plan.sweep.non_english_share,
        tokens_per_iteration=tokens_per_iteration or plan.global_batch_tokens,
        prediction=prediction,
        stop_on_forgetting=stop_on_forgetting,
    )


def forced_overshoot(config: WatchConfig, run_tokens: int) -> WatchConfig:
    """The rehearsal's drill: a prediction every evaluation exceeds, so the watch trips at the second."""
    bound = PredictedPoint(tokens=0, forgetting=FORCED_BOUND, forgetting_upper=FORCED_BOUND)
    prediction = PredictedTrajectory(
        source="the rehearsal's forced-overshoot drill: an upper bound of -1, below any measurable forgetting",
        level=0.9,
        points=[bound, bound.model_copy(update={"tokens": float(run_tokens)})],
    )
    return config.model_copy(update={"prediction": prediction})


def job_wandb(plan: Plan, environ: Mapping[str, str] = os.environ) -> JobWandb | None:
    """The job's W&B run in the sweep's project and group, the mode resolved here as for the sweep's trials (online
    without an API key falls back to offline); None when the sweep tracked nothing."""
    try:
        target, _ = resolve_wandb(plan.wandb, environ=environ)
    except TrackingError as error:
        raise PromotionError(str(error)) from None
    if target is None:
        return None
    return JobWandb(
        mode=target.mode,
        project=target.project,
        entity=target.entity,
        group=plan.sweep.name,
        config=plan.model_dump(mode="json"),
    )
