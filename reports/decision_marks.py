"""The decision drawn on the report's figures: the pick (an orange diamond, with its intervals), its confirmation
at fresh seeds (mean ± sd) and the best observed trial (a black star), each labelled for what it is, and under
the title the one line of reports/decision.py on why the pick is not the best observed trial.

The Pareto plot and the surrogate plot both draw through here, so they mark the same two answers the same way.
"""

from __future__ import annotations

import textwrap

from matplotlib.axes import Axes

from reports.decision import why_not_best_observed
from reports.snapshot import RunSnapshot
from sweep.choice.confirmation import ConfirmedPoint
from sweep.choice.pick import PickSource
from sweep.choice.verdict import spread

PICK_COLOUR = "#dd6b20"
"""The pick is an orange diamond on every figure; the best observed trial keeps the black star."""
PICK_MARKER = "D"
CONFIRMED_MARKER = "P"
REFUSED_MARKER = "X"
"""A candidate whose fresh seeds ended over the budget."""


def titled(title: str, snapshot: RunSnapshot, *, width: int) -> str:
    """`title`, and below it why the pick is not the best observed trial (when there is a pick), wrapped at `width`
    characters: what fits over the axes at 9 pt."""
    note = why_not_best_observed(snapshot.summary)
    return title if note is None else f"{title}\n{textwrap.fill(note, width)}"


def pick_on_front(ax: Axes, snapshot: RunSnapshot, *, colour: str | None = None, prefix: str = "") -> None:
    """The pick at its predicted (forgetting, domain_gain) with 90 % intervals as error bars (measured, at a
    best observed trial's point without a surrogate), then each confirmed candidate at its fresh seeds' mean ± sd."""
    pick = snapshot.summary.pick
    if pick.point is None:
        return
    point = pick.point
    where = f"lr_fraction {point.lr_fraction:.3g}, mix {point.mix}"
    if pick.gain is not None and pick.forgetting is not None:
        x, y = pick.forgetting.mean, pick.gain.mean
        xerr = [[x - pick.forgetting.low], [pick.forgetting.high - x]]
        yerr = [[y - pick.gain.low], [pick.gain.high - y]]
        label = f"pick ({pick.source.value}), predicted, 90 % intervals: {where}, P(within budget) "
        label += f"{pick.probability_within_budget:.2f}"
    elif point.measured_gain is not None and point.measured_forgetting is not None:
        x, y, xerr, yerr = point.measured_forgetting, point.measured_gain, None, None
        label = f"pick ({PickSource.OBSERVED.value}), measured: {where}"
    else:
        return
    ax.errorbar(
        [x], [y], xerr=xerr, yerr=yerr, fmt=PICK_MARKER, markersize=9, color=colour or PICK_COLOUR,
        markeredgecolor="white", capsize=3, zorder=6, label=prefix + label,
    )  # fmt: skip
    if not prefix:  # one run: the pick is the labelled point (several runs' labels go in the legend)
        ax.annotate(f"pick: {where}", (x, y), xytext=(10, -14), textcoords="offset points", fontsize=8,
                    color=PICK_COLOUR, fontweight="bold")  # fmt: skip
    for confirmed in snapshot.summary.confirmation.rounds:
        _confirmed_on_front(ax, confirmed, colour=colour or PICK_COLOUR, prefix=prefix)


def _confirmed_on_front(ax: Axes, point: ConfirmedPoint, *, colour: str, prefix: str) -> None:
    if point.gain is None or point.forgetting is None:
        return
    ax.errorbar(
        [point.forgetting.mean], [point.gain.mean], xerr=point.forgetting.sd or 0.0, yerr=point.gain.sd or 0.0,
        fmt=CONFIRMED_MARKER if point.within_budget else REFUSED_MARKER, markersize=10, color=colour,
        markeredgecolor="black", capsize=3, zorder=6, label=prefix + confirmed_label(point),
    )  # fmt: skip


def confirmed_label(point: ConfirmedPoint) -> str:
    """A confirmed candidate as a legend entry: how many fresh seeds, mean ± sd, within or over the budget."""
    seeds = len(point.trials)
    held = "within" if point.within_budget else "over"
    figures = f"gain {spread(point.gain)}, forgetting {spread(point.forgetting)}" if point.forgetting else "no end"
    return f"candidate {point.round + 1} at {seeds} fresh seed(s), mean ± sd: {figures}, {held} the budget"


def decision_on_surrogate(ax: Axes, snapshot: RunSnapshot, *, ratio) -> None:
    """On the surrogate's (lr_fraction, general:domain) plane: the best observed trial's star, each confirmed
    candidate that ended over the budget, and the pick's diamond labelled with its intervals and confirmation.
    `ratio`: domain_share -> the plane's general:domain."""
    summary = snapshot.summary
    best = summary.best_observed
    if best is not None:
        # Above the pick's diamond: at the same point both stay visible.
        ax.scatter(
            [best.lr_fraction], [ratio(best.domain_share)], marker="*", s=200, color="#111111",
            edgecolors="white", zorder=6, label=f"best observed trial ({best.number}), measured",
        )  # fmt: skip
    for point in summary.confirmation.rounds:
        if not point.within_budget:
            ax.scatter(
                [point.lr_fraction], [ratio(point.domain_share)], marker=REFUSED_MARKER, s=110, color=PICK_COLOUR,
                edgecolors="black", zorder=5, label=confirmed_label(point),
            )  # fmt: skip
    pick = summary.pick
    if pick.point is None:
        return
    label = f"pick ({pick.source.value})"
    if pick.gain is not None and pick.forgetting is not None:
        label += (
            f", predicted: gain {pick.gain.mean:.4f} [{pick.gain.low:.4f}, {pick.gain.high:.4f}], forgetting "
            f"{pick.forgetting.mean:.4f} [{pick.forgetting.low:.4f}, {pick.forgetting.high:.4f}], "
            f"P {pick.probability_within_budget:.2f}"
        )
    confirmed = summary.confirmation.confirmed
    if confirmed is not None:
        label += "\n" + confirmed_label(confirmed)
    ax.scatter(
        [pick.point.lr_fraction], [ratio(pick.point.domain_share)], marker=PICK_MARKER, s=170, color=PICK_COLOUR,
        edgecolors="black", zorder=5, label=label,
    )  # fmt: skip
