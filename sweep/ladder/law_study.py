"""A rung's sweep as rows of the law's table: every evaluation of every trial in its study, pruned, guarded and
replicate trials included up to where they stopped (sweep.study.record keeps each trial's evaluations in its history),
each against the base's losses the trial stored, never solved back from its domain_gain and forgetting.

An evaluation with a loss that is not finite (a diverging trial's last) is no observation of the law; its trial's
earlier evaluations are.
"""

from __future__ import annotations

import math

from sweep.law.table import Observation
from sweep.study.record import Attr, base_losses_of, history_of
from sweep.study.study import SweepStudy
from sweep.study.table import point_params
from sweep.target.schedule import lr_mean
from train_entry.trial_config import MAX_LOSS, Metrics


def study_observations(
    sweep: SweepStudy, *, rung: str, parameters: int, pretrain_tokens: float, study: str
) -> list[Observation]:
    """Every usable evaluation of every trial of `sweep`, the rung's study, as rows of rung `rung`; `study` says
    where the study is kept, for the error a corrupt stored base loss is (CorruptFile)."""
    plan = sweep.plan
    rows = []
    for frozen in sweep.trials():
        params = point_params(frozen, plan)
        history = history_of(frozen) if params is not None else None
        if not history:
            continue
        point = plan.space.point(params)
        base = base_losses_of(frozen, study=study)
        for metrics in history:
            if not _usable(metrics):
                continue
            rows.append(
                Observation(
                    rung=rung,
                    trial=str(frozen.number),
                    seed=frozen.user_attrs.get(Attr.SEED.value, plan.proxy.seed),
                    parameters=parameters,
                    pretrain_tokens=pretrain_tokens,
                    tokens=metrics.tokens_seen,
                    lr_fraction=point.lr_fraction,
                    lr_mean=lr_mean(plan.proxy, steps=metrics.step, total_steps=plan.proxy.steps),
                    domain_share=point.mix.domain_share,
                    general_loss=metrics.general_loss,
                    domain_loss=metrics.domain_loss,
                    base_general_loss=base.general_loss,
                    base_domain_loss=base.domain_loss,
                )
            )
    return rows


def _usable(metrics: Metrics) -> bool:
    losses = (metrics.general_loss, metrics.domain_loss)
    return (
        metrics.step > 0
        and metrics.tokens_seen > 0
        and all(math.isfinite(loss) and 0.0 < loss <= MAX_LOSS for loss in losses)
    )
