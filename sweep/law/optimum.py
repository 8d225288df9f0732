"""The law's constrained optimum at a target: the highest predicted domain_gain whose predicted forgetting stays within
the budget, over lr_fraction and the domain share at the target's N, tokens and LR schedule.

The optimum is searched beyond the searched box (a quarter of its lowest lr_fraction to four times its highest,
and nearly every share), so that an optimum the law puts outside the box is seen there and answered with the
direction to extend the space in, never clipped to the box's edge: nothing was measured beyond it.
"""

from __future__ import annotations

import math
from typing import Literal, Protocol

import numpy as np
from pydantic import Field, model_validator
from scipy.optimize import brentq, minimize

from sweep.law.model import Law, LossLaw, Values
from sweep.law.table import ObservationTable
from train_entry.config import StrictConfig
from train_entry.mix import MixRatio, ratio_of

WIDENING = 4.0
"""How far beyond the box's lr_fraction range the optimum is looked for: far enough to tell "the law's optimum
lies beyond" from "the box's edge binds"."""
SHARE_LIMITS = (0.005, 0.995)
"""The domain shares the optimum is looked for in: all but pure corpora, where the share term is singular."""
GRID = 41
"""Points per axis of the grid the search starts from (then refined by SLSQP): 41 x 41 laws are evaluated in
about a millisecond, and no optimum of a smooth law is narrower than a grid step."""
CONSTRAINT_TOLERANCE = 1e-7
"""Forgetting over the budget by at most this counts as on it: SLSQP stops within its tolerance of the constraint,
and 1e-7 of the base's loss is far below anything an evaluation can tell apart."""
TIE = 1e-9
"""Gains within this share of the best on the grid are the same gain."""
SLACK = 1e-6
"""In log lr_fraction and in share: a refined optimum this close to the box's edge is on it."""


class SearchBox(StrictConfig):
    """The searched ranges of lr_fraction and domain share: where the law has data to stand on."""

    lr_fraction: tuple[float, float]
    domain_share: tuple[float, float]

    @model_validator(mode="after")
    def _ordered(self) -> SearchBox:
        (lr_low, lr_high), (share_low, share_high) = self.lr_fraction, self.domain_share
        if not (0.0 < lr_low <= lr_high <= 1.0 and 0.0 <= share_low <= share_high <= 1.0):
            raise ValueError(
                f"a box needs 0 < lr_fraction low <= high <= 1 and 0 <= domain_share low <= high <= 1, got "
                f"lr_fraction={self.lr_fraction}, domain_share={self.domain_share}"
            )
        return self

    @classmethod
    def covering(cls, table: ObservationTable) -> SearchBox:
        """The ranges the table's trials ran at."""
        lr, share = table.lr_fraction, table.domain_share
        return cls(
            lr_fraction=(float(lr.min()), float(lr.max())), domain_share=(float(share.min()), float(share.max()))
        )

    def holds(self, log_lr: np.ndarray, share: np.ndarray) -> np.ndarray:
        """Which points (log lr_fraction, share) lie inside the box, within SLACK of its edges."""
        (lr_low, lr_high), (share_low, share_high) = self.lr_fraction, self.domain_share
        return (
            (log_lr >= math.log(lr_low) - SLACK)
            & (log_lr <= math.log(lr_high) + SLACK)
            & (share >= share_low - SLACK)
            & (share <= share_high + SLACK)
        )

    def outside(self, lr_fraction: float, domain_share: float) -> list[str]:
        """Which way a point lies outside the box, in words (empty: inside)."""
        (lr_low, lr_high), (share_low, share_high) = self.lr_fraction, self.domain_share
        toward = []
        if math.log(lr_fraction) > math.log(lr_high) + SLACK:
            toward.append(f"higher lr_fraction (above {lr_high:g})")
        elif math.log(lr_fraction) < math.log(lr_low) - SLACK:
            toward.append(f"lower lr_fraction (below {lr_low:g})")
        if domain_share > share_high + SLACK:
            toward.append(f"more domain data (domain share above {share_high:.3g}, mix {_mix(share_high)})")
        elif domain_share < share_low - SLACK:
            toward.append(f"more general data (domain share below {share_low:.3g}, mix {_mix(share_low)})")
        return toward


class Surface(Protocol):
    """A law of both losses: one form's (sweep.law.model.Law) or a weighted average of several."""

    def forgetting(self, parameters: Values, lr_fraction: Values, time: Values, domain_share: Values) -> np.ndarray: ...

    def domain_gain(
        self, parameters: Values, lr_fraction: Values, time: Values, domain_share: Values
    ) -> np.ndarray: ...


class Point(StrictConfig):
    """A point of the space and the law's domain_gain and forgetting there."""

    lr_fraction: float = Field(gt=0.0, le=1.0)
    domain_share: float = Field(ge=0.0, le=1.0)
    domain_gain: float
    forgetting: float

    @property
    def mix(self) -> str:
        return _mix(self.domain_share)


class Optimum(StrictConfig):
    """One law's answer at one target: its constrained optimum, and which way it lies outside the box."""

    point: Point | None
    """None: no lr_fraction and share near the box meets the budget."""
    toward: list[str]
    """Directions in which the point lies outside the box; empty when it lies inside."""
    least_forgetting: float
    """The least forgetting the law predicts anywhere it looked: what an infeasible budget is short of."""

    @property
    def inside(self) -> bool:
        return self.point is not None and not self.toward


def at(law: Surface, target: TargetScale, lr_fraction: float, domain_share: float) -> Point:
    gain, forgetting = evaluate(law, target, math.log(lr_fraction), domain_share)
    return Point(
        lr_fraction=lr_fraction, domain_share=domain_share, domain_gain=float(gain), forgetting=float(forgetting)
    )


def promotable_position(point: Point) -> tuple[float, float]:
    """lr_fraction and domain share as a plan writes them: lr_fraction to 4 significant digits, the mix as a ratio of
    3."""
    return float(f"{point.lr_fraction:.4g}"), MixRatio.parse(point.mix).domain_share


def promotable(law: Surface, target: TargetScale, point: Point) -> Point:
    """The point as a plan writes it (lr_fraction to 4 significant digits, the mix as a ratio of 3) with the law's
    gain and forgetting there, so that every figure shown is the promoted point's."""
    return at(law, target, *promotable_position(point))


def constrained_optimum(law: Surface, target: TargetScale, box: SearchBox, budget: float) -> Optimum:
    """The law's highest domain_gain with forgetting <= budget at the target: the best feasible point of a grid
    over (log lr_fraction, share) around the box, refined by SLSQP with the budget as a constraint."""
    bounds = [log_lr_limits(box), SHARE_LIMITS]
    grid_lr, grid_share = np.meshgrid(*search_axes(box, GRID), indexing="ij")
    gain, forgetting = evaluate(law, target, grid_lr, grid_share)
    feasible = np.isfinite(gain) & np.isfinite(forgetting) & (forgetting <= budget)
    least = float(np.nanmin(forgetting)) if np.any(np.isfinite(forgetting)) else math.inf
    if not np.any(feasible):
        return Optimum(point=None, toward=[], least_forgetting=least)
    start = _best_on_grid(np.where(feasible, gain, -np.inf), grid_lr, grid_share, box)
    values = _Memo(law, target)
    refined = minimize(
        lambda x: -values(x)[0],
        start,
        method="SLSQP",
        bounds=bounds,
        constraints=[{"type": "ineq", "fun": lambda x: budget - values(x)[1]}],
        # Gains are a few hundredths: SLSQP's default tolerance (1e-6 absolute) stopped it a grid step short.
        options={"ftol": 1e-12, "maxiter": 200},
    )
    point = refined.x if refined.success and _better(law, target, refined.x, start, budget) else start
    found = at(law, target, float(math.exp(point[0])), float(point[1]))
    return Optimum(point=found, toward=box.outside(found.lr_fraction, found.domain_share), least_forgetting=least)


class _Memo:
    """(domain_gain, forgetting) at (log lr_fraction, share), each point evaluated once: SLSQP asks for the gain and
    the forgetting at the same points (and at the same finite-difference steps around them)."""

    def __init__(self, law: Surface, target: TargetScale) -> None:
        self._law, self._target, self._seen = law, target, {}

    def __call__(self, x: np.ndarray) -> tuple[float, float]:
        key = (float(x[0]), float(x[1]))
        if key not in self._seen:
            gain, forgetting = evaluate(self._law, self._target, key[0], key[1])
            self._seen[key] = (float(gain), float(forgetting))
        return self._seen[key]


def log_lr_limits(box: SearchBox) -> tuple[float, float]:
    """The log lr_fraction range an optimum is looked for in: WIDENING beyond the box each way, at most 1."""
    return math.log(box.lr_fraction[0] / WIDENING), math.log(min(1.0, box.lr_fraction[1] * WIDENING))


def search_axes(box: SearchBox, points: int) -> tuple[np.ndarray, np.ndarray]:
    """`points` log lr_fractions and shares spanning where an optimum is looked for, with the box's own edges."""
    log_lr = np.union1d(np.linspace(*log_lr_limits(box), points), np.log(box.lr_fraction))
    return log_lr, np.union1d(np.linspace(*SHARE_LIMITS, points), box.domain_share)


def _best_on_grid(gain: np.ndarray, grid_lr: np.ndarray, grid_share: np.ndarray, box: SearchBox) -> np.ndarray:
    """The grid point of highest gain; on a plateau (a law flat along a direction it never saw vary, such as the
    LR when every run had one LR area) the one nearest the box's centre: nothing says beyond the box is better."""
    best = np.max(gain)
    ties = np.argwhere(gain >= best - TIE * max(abs(best), 1e-12))
    centre = np.array([np.mean(np.log(box.lr_fraction)), np.mean(box.domain_share)])
    distance = [np.hypot(grid_lr[i, j] - centre[0], grid_share[i, j] - centre[1]) for i, j in ties]
    i, j = ties[int(np.argmin(distance))]
    return np.array([grid_lr[i, j], grid_share[i, j]])


def evaluate(law: Surface, target: TargetScale, log_lr, share) -> tuple[np.ndarray, np.ndarray]:
    """domain_gain and forgetting of `law` at the target, at arrays of log lr_fraction and share."""
    lr = np.exp(log_lr)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return (
            np.asarray(law.domain_gain(target.parameters, lr, target.time, share)),
            np.asarray(law.forgetting(target.parameters, lr, target.time, share)),
        )


def _better(law: Surface, target: TargetScale, refined: np.ndarray, start: np.ndarray, budget: float) -> bool:
    """The refined point counts only when it keeps the budget and gains at least what the grid's best did: SLSQP
    may stop on the constraint's far side by its tolerance."""
    gain, forgetting = evaluate(law, target, refined[0], refined[1])
    start_gain = evaluate(law, target, start[0], start[1])[0]
    return bool(forgetting <= budget + CONSTRAINT_TOLERANCE and gain >= start_gain)


class Refusal(StrictConfig):
    """Why the law gives no number to promote, and what to do instead."""

    kind: Literal["extend_space", "add_rung", "form_error", "no_credible_prediction"]
    """extend_space: the truth may lie outside the searched box; add_rung: the rungs are too few or too close in N
    to say how the law (or its error) moves to the target; form_error: the form's error beyond the noise is so large
    that no point keeps the budget with the rule's probability; no_credible_prediction: the rows cannot reach the
    target at all (one LR area, one share), no refits measure P, or no point keeps the budget even without the
    form's error."""
    message: str
    add_rung_at: float | None = Field(None, gt=0.0)
    """N of the rung that would help, when another rung would (the message says where and by how much)."""


def credibility(law: Law, target: TargetScale, table: ObservationTable) -> Refusal | None:
    """A refusal when the rows cannot say how the optimum moves to the target: one model size for another N, one
    LR area, or one domain share."""
    spans = law.general.spans
    sizes = set(table.parameters.tolist())
    problems = []
    if not spans.parameters and not any(math.isclose(target.parameters, size, rel_tol=1e-9) for size in sizes):
        problems.append(f"every row has N = {next(iter(sizes)):.4g}, so how the losses move with N is unknown")
    if not spans.lr_area:
        problems.append(
            "every row has the same LR area (lr_fraction x lr_mean x tokens / pretrain_tokens), so the LR's effect "
            "is unknown"
        )
    if not spans.domain_share:
        problems.append("every row has the same domain share, so the mix's effect is unknown")
    if not problems:
        return None
    return Refusal(
        kind="no_credible_prediction", message=f"no credible prediction at {target.name}: {'; '.join(problems)}"
    )


def _mix(domain_share: float) -> str:
    share = min(max(domain_share, 1e-12), 1 - 1e-12)
    return str(ratio_of(math.log((1.0 - share) / share)))


def critical_share(general: LossLaw, parameters: float, lr_fraction: float, time: float, budget: float) -> float | None:
    """The largest domain share whose forgetting the law keeps within `budget` at (N, lr_fraction, lr_mean x D /
    D_pre): the CMR law's critical mixture ratio (arXiv:2407.17467, Definition 3) read off the law. SHARE_LIMITS'
    upper end when every share keeps it; None when none does."""
    shares = np.linspace(*SHARE_LIMITS, 2 * GRID + 1)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        excess = np.asarray(general.change(parameters, lr_fraction, time, shares)) - budget
    feasible = np.isfinite(excess) & (excess <= 0)
    if not feasible.any():
        return None
    last = int(np.flatnonzero(feasible)[-1])
    if last == len(shares) - 1 or not np.isfinite(excess[last + 1]):
        return float(shares[last])
    return float(
        brentq(
            lambda share: float(general.change(parameters, lr_fraction, time, share)) - budget,
            shares[last],
            shares[last + 1],
        )
    )
