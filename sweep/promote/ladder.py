"""A ladder run promoted: its lines extrapolated to the target's parameter count, with their intervals and the
warnings a reader must see before trusting them (sweep.promote.point turns this into the plan's PromotedPoint)."""

from __future__ import annotations

import math

from sweep.choice.pick import ratio_of
from sweep.choice.surrogate import Box
from sweep.files.records import CorruptFile
from sweep.files.rundir import RunDir
from sweep.ladder.fit import Interval, Quantity
from sweep.ladder.record import LadderSummary, read_ladder
from sweep.promote.errors import PromotionError
from sweep.promote.targets import Target
from sweep.scale import non_embedding_params
from sweep.spec.space import SearchSpace
from train_entry.config import StrictConfig
from train_entry.mix import Mix

NEEDED = (Quantity.LOG_LR_FRACTION, Quantity.LOG_MIX_RATIO, Quantity.GAIN, Quantity.FORGETTING)


class LadderPoint(StrictConfig):
    """The ladder's lines at the target's N: the point, the gain and forgetting expected there, and how sure."""

    lr_fraction: float
    mix: Mix
    """The point promoted: the lines' point, clipped into the searched space (a warning says when)."""
    parameters: int
    """The target's non-embedding parameters, counted as the rungs' were."""
    rungs: list[str]
    dof: int
    """Degrees of freedom of the lines (rungs - 2): 1 with three rungs, t quantile 6.31 at 90 %."""
    lr_fraction_interval: tuple[float, float] | None
    mix_interval: tuple[Mix, Mix] | None
    """90 % prediction intervals of the point's coordinates; None with no degree of freedom."""
    warnings: list[str]


def finished_ladder(run: RunDir) -> tuple[LadderSummary, RunDir]:
    """The ladder's summary and its largest rung's run directory; PromotionError unless every rung finished."""
    try:
        summary = read_ladder(run)
    except CorruptFile as exc:
        raise PromotionError(str(exc)) from None
    if not summary.finished:
        done = [rung.name for rung in summary.rungs]
        raise PromotionError(
            f"{run.path} is an unfinished ladder: rungs {done or 'none'} of {summary.planned} have finished "
            "(run `sweep run SPEC` to the end first)"
        )
    return summary, run.rung(summary.planned[-1])


def extrapolate(summary: LadderSummary, target: Target, run: RunDir) -> tuple[dict[Quantity, Interval], LadderPoint]:
    """The lines at the target's N, the point clipped into the rungs' searched space (nothing was measured
    outside it); PromotionError when a line is missing (a rung without a pick)."""
    parameters = non_embedding_params(target.model)
    estimates = summary.extrapolate(parameters)
    missing = [quantity.value for quantity in NEEDED if quantity not in estimates]
    if missing:
        raise PromotionError(
            f"{run.ladder_json}: no line for {', '.join(missing)} (fewer than two rungs have a pick); promote one "
            f"rung instead, e.g. {run.rung(summary.planned[-1]).path}"
        )
    lr, mix = estimates[Quantity.LOG_LR_FRACTION], estimates[Quantity.LOG_MIX_RATIO]
    if summary.space is None:
        log_lr, log_ratio = lr.mean, mix.mean
        clipped = [f"{run.ladder_json} does not record the searched space: the lines' point is not clipped into it"]
    else:
        log_lr, log_ratio, clipped = _within(summary.space, lr.mean, mix.mean)
    point = LadderPoint(
        lr_fraction=float(f"{math.exp(log_lr):.4g}"),
        mix=ratio_of(log_ratio),
        parameters=parameters,
        rungs=[rung.name for rung in summary.rungs],
        dof=lr.dof,
        lr_fraction_interval=None if lr.low is None else (math.exp(lr.low), math.exp(lr.high)),
        mix_interval=None if mix.low is None else (ratio_of(mix.high), ratio_of(mix.low)),
        warnings=_warnings(summary, estimates, target, parameters) + clipped,
    )
    return estimates, point


def _within(space: SearchSpace, log_lr: float, log_ratio: float) -> tuple[float, float, list[str]]:
    """The point clipped into the space's box (log lr_fraction, log general:domain), and a warning per clip."""
    box = Box.of(space)
    warnings = []
    lr = min(max(log_lr, box.log_lr[0]), box.log_lr[1])
    if lr != log_lr:
        warnings.append(
            f"the lines' lr_fraction at the target, {math.exp(log_lr):.4g}, lies outside the searched "
            f"{math.exp(box.log_lr[0]):g}-{math.exp(box.log_lr[1]):g}: clipped to {math.exp(lr):.4g}, as nothing "
            "was measured beyond it (widen space.lr_fraction and rerun the ladder to follow the trend further)"
        )
    ratio = min(max(log_ratio, box.log_ratio[0]), box.log_ratio[1])
    if ratio != log_ratio:
        warnings.append(
            f"the lines' mix at the target, {ratio_of(log_ratio)}, lies outside the searched {ratio_of(box.log_ratio[1])} "
            f"to {ratio_of(box.log_ratio[0])}: clipped to {ratio_of(ratio)} (widen space.mix and rerun the ladder to "
            "follow the trend further); the gain and forgetting shown are the lines' at the target, not at the clip"
        )
    return lr, ratio, warnings


def _warnings(
    summary: LadderSummary, estimates: dict[Quantity, Interval], target: Target, parameters: int
) -> list[str]:
    budget = summary.forgetting_budget
    forgetting = estimates[Quantity.FORGETTING]
    largest = summary.rungs[-1].parameters
    reach = (
        f"extrapolated {math.log10(parameters / largest):.1f} orders of magnitude beyond the largest rung "
        f"({largest:,} to {parameters:,} non-embedding parameters of {target.name}) on {len(summary.rungs)} rungs"
    )
    warnings = [reach]
    if forgetting.low is None:
        warnings.append("no interval: two rungs leave no degree of freedom to judge the lines by")
    elif forgetting.high > budget:
        warnings.append(
            f"the extrapolated forgetting's 90 % interval [{forgetting.low:.4f}, {forgetting.high:.4f}] crosses the "
            f"forgetting budget {budget:g}: the ladder cannot promise the full run stays within it"
        )
    lr = math.exp(estimates[Quantity.LOG_LR_FRACTION].mean)
    if not 0.0 < lr <= 1.0:
        warnings.append(f"the extrapolated lr_fraction {lr:.4g} is outside (0, 1]: the lines do not hold that far")
    return warnings
