"""A ladder run promoted: its lines extrapolated to the target's parameter count, with their intervals and the
warnings a reader must see before trusting them (sweep.promote.plan turns this into the plan's Optimum)."""

from __future__ import annotations

import math

from sweep.files import CorruptFile
from sweep.ladder_fit import Interval, Quantity
from sweep.ladder_record import LadderSummary, read_ladder
from sweep.pick import ratio_of
from sweep.promote.errors import PromotionError
from sweep.promote.targets import Target
from sweep.rundir import RunDir
from sweep.scale import non_embedding_params
from train_entry.config import StrictConfig
from train_entry.mix import Mix

NEEDED = (Quantity.LOG_LR_FRACTION, Quantity.LOG_MIX_RATIO, Quantity.GAIN, Quantity.FORGETTING)


class LadderPoint(StrictConfig):
    """The ladder's lines at the target's N: the point, the gain and forgetting expected there, and how sure."""

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
    """The lines at the target's N; PromotionError when a line is missing (a rung without a pick)."""
    parameters = non_embedding_params(target.model)
    estimates = summary.extrapolate(parameters)
    missing = [quantity.value for quantity in NEEDED if quantity not in estimates]
    if missing:
        raise PromotionError(
            f"{run.ladder_json}: no line for {', '.join(missing)} (fewer than two rungs have a pick); promote one "
            f"rung instead, e.g. {run.rung(summary.planned[-1]).path}"
        )
    lr, mix = estimates[Quantity.LOG_LR_FRACTION], estimates[Quantity.LOG_MIX_RATIO]
    point = LadderPoint(
        parameters=parameters,
        rungs=[rung.name for rung in summary.rungs],
        dof=lr.dof,
        lr_fraction_interval=None if lr.low is None else (math.exp(lr.low), math.exp(lr.high)),
        mix_interval=None if mix.low is None else (ratio_of(mix.high), ratio_of(mix.low)),
        warnings=_warnings(summary, estimates, target, parameters),
    )
    return estimates, point


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
