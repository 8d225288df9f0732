"""The report's figures, drawn with matplotlib's Agg backend (no display, no fonts fetched).

Each function returns a Figure; reports/report.py saves it as a PNG and embeds the same bytes in
the page. Colours keep one meaning everywhere: a status has one colour, the best observed trial is a star, the
pick an orange diamond (reports/decision_marks.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")  # before pyplot: a report is written on machines without a display

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from reports.decision_marks import PICK_COLOUR, decision_on_surrogate, pick_on_front, titled
from reports.snapshot import RunSnapshot, ratio_label
from sweep.choice.support import UNTRIED_DISTANCE, nearest_trial_distance, untried_mixes
from sweep.choice.surrogate import completed
from sweep.space import LRFractionRange, MixRange
from sweep.study.record import Status
from sweep.study.row import TrialRow
from train_entry.mix import MixRatio

STATUS_COLOURS = {
    Status.COMPLETED: "#2b6cb0",
    Status.PRUNED: "#d69e2e",
    Status.DIVERGED: "#c53030",
    Status.FAILED: "#718096",
    Status.RUNNING: "#38a169",
    Status.WAITING: "#a0aec0",
}
RUN_COLOURS = ("#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d53f8c", "#319795")
"""One colour per run in a comparison."""
BEST_COLOUR = "#111111"
LR_BINS = 5
"""Columns of a heat map when lr_fraction is sampled from a range: enough to show a trend with
the 10-30 trials of a sweep, few enough that most cells hold a trial."""
MIX_BINS = 5
MINOR_LR_DIGITS = (2, 3, 5)
"""Minor ticks of a log lr_fraction axis labelled between the decades: 0.02, 0.03, 0.05, 0.2, ..."""


def front_figure(snapshots: Sequence[RunSnapshot]) -> Figure:
    """domain_gain against forgetting: every finished trial, each run's Pareto front, budget, best observed trial
    and pick with its confirmation; for one run, why the pick is not the best observed trial under the title."""
    figure, ax = plt.subplots(figsize=(8, 6.8), layout="constrained")
    several = len(snapshots) > 1
    for index, snapshot in enumerate(snapshots):
        colour = RUN_COLOURS[index % len(RUN_COLOURS)]
        _plot_trials_and_front(ax, snapshot, colour=colour, several=several)
        _plot_best_observed(ax, snapshot, colour=colour, several=several)
        pick_on_front(ax, snapshot, colour=colour if several else None, prefix=f"{snapshot.name}: " if several else "")
    budgets = sorted({snapshot.plan.forgetting_budget for snapshot in snapshots})
    for budget in budgets:
        ax.axvline(budget, color="#c53030", linestyle="--", linewidth=1.2, label=f"forgetting budget {budget:.3g}")
    ax.set_xlabel("forgetting (general_loss / base − 1; lower is better)")
    ax.set_ylabel("domain_gain (1 − domain_loss / base; higher is better)")
    if several:
        ax.set_title("domain_gain vs forgetting — " + " vs ".join(s.name for s in snapshots))
    else:
        ax.set_title(titled("domain_gain vs forgetting", snapshots[0], width=110), fontsize=9)
    _limit_to_what_matters(ax, snapshots)
    ax.grid(alpha=0.3)
    # Below the axes, as on the surrogate plot: inside, the decision's long labels hid trials.
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), frameon=False)
    return figure


OUTLIER_MARGIN = 0.15
"""Of the span of what matters, left around it on the trade-off plot; a stopped trial beyond is drawn at the edge."""


def front_extent(snapshots: Sequence[RunSnapshot]) -> tuple[tuple[float, float], tuple[float, float]]:
    """(forgetting, domain_gain) limits of the trade-off plot: the completed trials, each pick with its intervals and
    its confirmation's mean ± sd, and the budget, with a margin. A trial stopped early far out (a pruned trial whose
    forgetting was 5 x the budget) would squeeze everything that decides into a corner: it is drawn at the edge."""
    xs, ys = [], []
    for snapshot in snapshots:
        xs.append(snapshot.plan.forgetting_budget)
        for row in snapshot.rows:
            if row.status is Status.COMPLETED and _plottable(row):
                xs.append(row.forgetting)
                ys.append(row.domain_gain)
        pick = snapshot.summary.pick
        if pick.forgetting is not None and pick.gain is not None:
            xs += [pick.forgetting.low, pick.forgetting.high]
            ys += [pick.gain.low, pick.gain.high]
        for point in snapshot.summary.confirmation.rounds:
            if point.forgetting is not None and point.gain is not None:
                xs += [
                    point.forgetting.mean - (point.forgetting.sd or 0),
                    point.forgetting.mean + (point.forgetting.sd or 0),
                ]
                ys += [point.gain.mean - (point.gain.sd or 0), point.gain.mean + (point.gain.sd or 0)]
    if not ys:  # nothing completed yet: the stopped trials are all there is
        for snapshot in snapshots:
            ys += [row.domain_gain for row in snapshot.rows if _plottable(row)]
            xs += [row.forgetting for row in snapshot.rows if _plottable(row)]
    return _padded(xs), _padded(ys or [0.0])


def _padded(values: list[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    margin = (high - low) * OUTLIER_MARGIN or abs(high) * OUTLIER_MARGIN or 1e-3
    return low - margin, high + margin


def _limit_to_what_matters(ax: Axes, snapshots: Sequence[RunSnapshot]) -> None:
    """Sets the limits of front_extent and draws each stopped trial beyond them at the edge, with its value."""
    (x_low, x_high), (y_low, y_high) = front_extent(snapshots)
    ax.set_xlim(x_low, x_high)
    ax.set_ylim(y_low, y_high)
    for snapshot in snapshots:
        for row in snapshot.rows:
            if row.status is Status.COMPLETED or not _plottable(row):
                continue
            if x_low <= row.forgetting <= x_high and y_low <= row.domain_gain <= y_high:
                continue
            x, y = min(max(row.forgetting, x_low), x_high), min(max(row.domain_gain, y_low), y_high)
            ax.annotate(
                f"#{row.number} ({row.status.value.lower()}) at {row.forgetting:.3f}, {row.domain_gain:.3f} →",
                (x, y), xytext=(-4, -6 if y >= y_high else 6), textcoords="offset points", ha="right", va="center", fontsize=7,
                color="#4a5568", annotation_clip=False,
            )  # fmt: skip


def _plot_trials_and_front(ax: Axes, snapshot: RunSnapshot, *, colour: str, several: bool) -> None:
    """One run's completed trials, its pruned and diverged ones where they stopped, and its Pareto front.

    A single run's points take their status colours; with several runs each run has one colour.
    """
    label = f"{snapshot.name}: " if several else ""
    # On the pool only: a confirmation trial's figures are on its own draw, drawn as its round's mean (decision_marks).
    completed = [r for r in snapshot.rows if r.status is Status.COMPLETED and r.on_pool and _plottable(r)]
    stopped = [r for r in snapshot.rows if r.status in (Status.PRUNED, Status.DIVERGED) and _plottable(r)]
    ax.scatter(
        [r.forgetting for r in completed],
        [r.domain_gain for r in completed],
        s=36,
        color=colour if several else STATUS_COLOURS[Status.COMPLETED],
        alpha=0.75,
        label=f"{label}completed trials, on the pool",
    )
    if stopped:
        ax.scatter(
            [r.forgetting for r in stopped],
            [r.domain_gain for r in stopped],
            s=36,
            marker="x",
            color=colour if several else STATUS_COLOURS[Status.PRUNED],
            alpha=0.6,
            label=f"{label}pruned / diverged (where they stopped)",
        )
    front = snapshot.selection.pareto
    if front:
        ax.plot(
            [r.forgetting for r in front],
            [r.domain_gain for r in front],
            drawstyle="steps-post",
            color=colour,
            linewidth=1.6,
            label=f"{label}Pareto front",
        )


def _plot_best_observed(ax: Axes, snapshot: RunSnapshot, *, colour: str, several: bool) -> None:
    """One run's best observed trial as a star, labelled beside it for a single run and in the legend for several."""
    best = snapshot.selection.best_observed
    if best is None:
        return
    label = f"{snapshot.name}: " if several else ""
    where = f"lr_fraction {best.lr_fraction:.3g}, mix {snapshot.mix_label(best)}"
    ax.scatter(
        [best.forgetting],
        [best.domain_gain],
        s=260,
        marker="*",
        color=colour if several else BEST_COLOUR,
        edgecolor="white",
        linewidth=0.8,
        zorder=5,
        # With several runs the optima may sit close together: their labels go in the legend.
        label=f"{label}best observed trial ({best.number}), one seed: {where}",
    )


def heatmap_figure(snapshot: RunSnapshot, metric: str) -> Figure:
    """Mean final `metric` of the completed trials on the pool in each (lr_fraction, mix) cell, with the count (a
    confirmation trial's figures, on another text, are not averaged in)."""
    rows = [r for r in snapshot.rows if r.status is Status.COMPLETED and r.on_pool and _plottable(r)]
    lr_axis = _lr_axis(snapshot)
    mix_axis = _mix_axis(snapshot)
    sums = np.zeros((len(mix_axis.labels), len(lr_axis.labels)))
    counts = np.zeros(sums.shape, dtype=int)
    for row in rows:
        cell = mix_axis.index(row.domain_share), lr_axis.index(row.lr_fraction)
        sums[cell] += getattr(row, metric)
        counts[cell] += 1
    means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    # Cells tried only by trials that stopped early: explored, unlike the truly empty ones.
    stopped = np.zeros(sums.shape, dtype=int)
    for row in snapshot.rows:
        if row.status in (Status.PRUNED, Status.DIVERGED):
            stopped[mix_axis.index(row.domain_share), lr_axis.index(row.lr_fraction)] += 1
    figure, ax = plt.subplots(
        figsize=(2.0 + 1.2 * len(lr_axis.labels), 1.6 + 0.75 * len(mix_axis.labels)), layout="constrained"
    )
    # Higher gain is good, lower forgetting is good: both scales run from bad (light) to good (dark).
    cmap = "Blues" if metric == "domain_gain" else "Purples_r"
    ax.set_facecolor("#e2e8f0")  # grey: no completed trial in the cell, unlike a pale value
    image = ax.imshow(np.ma.masked_invalid(means), cmap=cmap, aspect="auto", origin="lower")
    figure.colorbar(image, ax=ax, label=metric)
    budget = snapshot.plan.forgetting_budget
    for i in range(len(mix_axis.labels)):
        for j in range(len(lr_axis.labels)):
            if not counts[i, j]:
                if stopped[i, j]:
                    label = f"{stopped[i, j]} stopped\nearly"
                    ax.text(j, i, label, ha="center", va="center", fontsize=8, color="#4a5568")
                continue
            text = f"{means[i, j]:.3f}\nn={counts[i, j]}"
            if metric == "forgetting" and means[i, j] > budget:
                text += "\nover budget"
            # Dark cells get white text: the colour map's luminance decides, not the value's sign.
            red, green, blue, _ = image.cmap(image.norm(means[i, j]))
            dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")
    point = snapshot.summary.pick.point
    if point is not None:
        cell = (lr_axis.index(point.lr_fraction), mix_axis.index(point.domain_share))
        ax.add_patch(plt.Rectangle((cell[0] - 0.5, cell[1] - 0.5), 1, 1, fill=False, edgecolor=PICK_COLOUR, lw=3))
    ax.set_xticks(range(len(lr_axis.labels)), lr_axis.labels, fontsize=8)
    ax.set_yticks(range(len(mix_axis.labels)), mix_axis.labels, fontsize=8)
    ax.set_xlabel("lr_fraction" + (" (binned)" if lr_axis.binned else ""))
    ax.set_ylabel("mix general:domain" + (" (binned)" if mix_axis.binned else ""))
    title = f"final {metric} of completed trials"
    ax.set_title(title + (" (the pick's cell outlined)" if point is not None else ""), fontsize=10)
    return figure


@dataclass(frozen=True)
class Surface:
    """The surrogate plot's grid: lr_fraction and general:domain at each node, the predicted domain_gain, P(a re-run
    within the budget), and whether a completed trial is near (the surrogate's own figures elsewhere)."""

    lr_fraction: np.ndarray
    ratio: np.ndarray
    gain: np.ndarray
    probability: np.ndarray
    untried: np.ndarray


def surrogate_surface(snapshot: RunSnapshot, *, lr_nodes: int = 60, mix_nodes: int = 40) -> Surface:
    """The pick's own surrogate (RunSnapshot.surrogate) over the searched box. Untried: at a listed mix no trial ran
    to the end, or farther than sweep.choice.support.UNTRIED_DISTANCE from every completed trial."""
    surrogate = snapshot.surrogate
    if surrogate is None:
        raise ValueError(f"run {snapshot.name} has too few distinct completed points for a surrogate")
    (low_lr, high_lr), (low_ratio, high_ratio) = surrogate.box.log_lr, surrogate.box.log_ratio
    lr_axis, ratio_axis = np.linspace(low_lr, high_lr, lr_nodes), np.linspace(low_ratio, high_ratio, mix_nodes)
    point = snapshot.summary.pick.point
    if point is not None:  # a node at the pick itself: the drawn region there is the text's P, not an interpolation
        lr_axis = _with_node(lr_axis, math.log(point.lr_fraction))
        ratio_axis = _with_node(ratio_axis, math.log((1 - point.domain_share) / point.domain_share))
    log_lr, log_ratio = np.meshgrid(lr_axis, ratio_axis)
    lr, share = np.exp(log_lr).ravel(), 1.0 / (1.0 + np.exp(log_ratio).ravel())
    gain, forgetting = surrogate.predict(lr, share)
    untried = nearest_trial_distance(snapshot.space, snapshot.rows, lr, share) > UNTRIED_DISTANCE
    mixes = untried_mixes(snapshot.space, snapshot.rows)
    if mixes:
        # A listed mix is a row of the plane: untried when no trial ran there, whatever the distance across mixes.
        shares = [MixRatio.parse(mix).domain_share for mix in mixes]
        untried |= np.isin(np.round(_nearest_listed(snapshot, share), 9), np.round(shares, 9))
    shape = log_lr.shape
    return Surface(
        lr_fraction=np.exp(log_lr),
        ratio=np.exp(log_ratio),
        gain=gain.mean.reshape(shape),
        probability=forgetting.probability_at_most(snapshot.plan.forgetting_budget).reshape(shape),
        untried=untried.reshape(shape),
    )


def _with_node(axis: np.ndarray, value: float) -> np.ndarray:
    """The axis with a node at `value`, in place of a node that rounding alone sets apart from it."""
    return np.union1d(axis[~np.isclose(axis, value, rtol=0.0, atol=1e-9)], [value])


def _nearest_listed(snapshot: RunSnapshot, share: np.ndarray) -> np.ndarray:
    """Each domain_share moved to the nearest listed mix's (in log general:domain, the plot's axis)."""
    listed = np.array([mix.domain_share for mix in snapshot.space.mix])
    log_ratio = np.log((1 - share) / share)
    listed_log = np.log((1 - listed) / listed)
    return listed[np.argmin(np.abs(log_ratio[:, None] - listed_log[None, :]), axis=1)]


def surrogate_figure(snapshot: RunSnapshot) -> Figure:
    """The pick's surrogate: its predicted domain_gain over the searched box, the region where a re-run stays within
    the budget with the pick rule's probability, where no trial came near, the completed trials, the best observed
    trial, and the pick with its intervals and confirmation (a run with a surrogate only)."""
    surface = surrogate_surface(snapshot)
    x, y = surface.lr_fraction, surface.ratio
    figure, ax = plt.subplots(figsize=(7.5, 5.8), layout="constrained")
    filled = ax.contourf(x, y, surface.gain, levels=14, cmap="Blues")
    figure.colorbar(filled, ax=ax, label="predicted domain_gain")
    minimum = snapshot.plan.pick.min_probability
    # Hatched: where a re-run is within the budget with less than the rule's probability (never picked).
    with plt.rc_context({"hatch.linewidth": 0.4, "hatch.color": "#4a5568"}):
        ax.contourf(x, y, surface.probability, levels=[0.0, minimum], colors="none", hatches=["//"])
    if surface.untried.any():
        ax.contourf(x, y, surface.untried.astype(float), levels=[0.5, 1.5], colors=["#a0aec0"], alpha=0.6)
        ax.fill([], [], color="#a0aec0", alpha=0.6, label="no completed trial near: the surrogate's extrapolation")
    edge = ax.contour(x, y, surface.probability, levels=[minimum], colors="#c53030", linewidths=2)
    ax.clabel(edge, fmt={minimum: f"P(within budget) = {minimum:g}"}, fontsize=8)
    tried = completed(snapshot.rows)
    ax.scatter(
        [row.lr_fraction for row in tried],
        [(1 - row.domain_share) / row.domain_share for row in tried],
        s=22, color="white", edgecolors="black", linewidths=0.8, zorder=3, label="completed trials",
    )  # fmt: skip
    decision_on_surrogate(ax, snapshot, ratio=lambda share: (1 - share) / share)
    _log_axes(ax, snapshot)
    ax.set_xlim(x.min() / 1.08, x.max() * 1.08)
    ax.set_ylim(y.min() / 1.15, y.max() * 1.15)  # the edge trials stay visible
    ax.set_xlabel("lr_fraction")
    ax.set_ylabel("mix general:domain")
    # Below the axes: the decision's labels are long, and inside they would hide the surface.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize=7, frameon=False)
    ax.set_title(
        titled(f"surrogate: predicted domain_gain; hatched: within budget with P < {minimum:g}", snapshot, width=85),
        fontsize=9,
    )
    return figure


def _minor_lr_label(value: float, _position: int) -> str:
    digit = round(value / 10 ** math.floor(math.log10(value)))
    return f"{value:.2g}" if digit in MINOR_LR_DIGITS else ""


def _log_axes(ax: Axes, snapshot: RunSnapshot) -> None:
    """Log axes labelled in the sweep's own terms: plain lr_fractions, and general:domain as the spec lists it."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_formatter(ticker.FuncFormatter(_minor_lr_label))
    mix = snapshot.space.mix
    ratios = [mix.low, mix.high] if isinstance(mix, MixRange) else list(mix)
    ax.set_yticks([r.general / r.domain for r in ratios], [str(r) for r in ratios])
    ax.yaxis.set_minor_locator(ticker.NullLocator())


def curves_figure(snapshot: RunSnapshot) -> Figure:
    """domain_loss and general_loss against tokens for every trial; pruned and diverged ones end in a marker."""
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.8), layout="constrained")
    pick_trials = set(snapshot.summary.pick_trials)
    marks = {Status.PRUNED: "X", Status.DIVERGED: "v", Status.RUNNING: ">"}
    for ax, loss in zip(axes, ("domain_loss", "general_loss")):
        for row in snapshot.rows:
            history = snapshot.histories.get(row.number)
            if not history:
                continue
            # Every trial starts from the base: its loss at 0 tokens on the trial's own validation draw.
            start = [(0, getattr(snapshot.bases[row.number], loss))]
            # A diverged trial's last evaluation may be NaN or inf: it ends at its last finite one.
            finite = [(m.tokens_seen, getattr(m, loss)) for m in history if math.isfinite(getattr(m, loss))]
            if not finite:
                continue
            tokens, values = zip(*start, *finite)
            is_pick = row.number in pick_trials
            colour = PICK_COLOUR if is_pick else STATUS_COLOURS[row.status]
            width, alpha = (2.4, 1.0) if is_pick else (1.0, 0.7)
            ax.plot(tokens, values, color=colour, linewidth=width, alpha=alpha)
            if row.status in marks:
                ax.plot(tokens[-1], values[-1], marks[row.status], color=colour, markersize=8)
            end = (tokens[-1], values[-1])
            ax.annotate(str(row.number), end, xytext=(3, 0), textcoords="offset points", fontsize=7)
        # One line per validation draw the trials were measured on (the confirmation rounds' draws differ).
        for base in sorted({getattr(base, loss) for base in snapshot.bases.values()}):
            ax.axhline(base, color="#4a5568", linestyle=":", linewidth=1.2)
        ax.set_xlabel("tokens")
        ax.set_ylabel(loss)
        ax.set_title(f"{loss} (dotted: the base's)", fontsize=10)
        ax.grid(alpha=0.3)
    handles = [
        plt.Line2D([], [], color=STATUS_COLOURS[status], marker=marks.get(status), label=status.value.lower())
        for status in (Status.COMPLETED, Status.PRUNED, Status.DIVERGED, Status.RUNNING)
    ]
    if pick_trials:
        label = f"the pick's trials ({', '.join(map(str, sorted(pick_trials)))})"
        handles.append(plt.Line2D([], [], color=PICK_COLOUR, linewidth=2.4, label=label))
    axes[1].legend(handles=handles, fontsize=8, loc="best")
    return figure


def _plottable(row: TrialRow) -> bool:
    """Has a finite final evaluation: a diverged trial's last one may be NaN or inf."""
    return all(value is not None and math.isfinite(value) for value in (row.domain_gain, row.forgetting))


class _Axis:
    """Heat map cells along one parameter: the listed values, or bins of a sampled range."""

    def __init__(self, *, labels: list[str], index: Callable[[float], int], binned: bool) -> None:
        self.labels = labels
        self.index = index
        self.binned = binned


def _lr_axis(snapshot: RunSnapshot) -> _Axis:
    space = snapshot.space.lr_fraction
    if isinstance(space, LRFractionRange):
        edges = _edges(space.low, space.high, LR_BINS, log=space.log)
        labels = [f"{low:.3g}–{high:.3g}" for low, high in itertools.pairwise(edges)]
        return _Axis(labels=labels, index=lambda value: _bin(edges, value), binned=True)
    listed = sorted(space)
    return _Axis(
        labels=[f"{v:.3g}" for v in listed],
        index=lambda value: min(range(len(listed)), key=lambda k: abs(listed[k] - value)),
        binned=False,
    )


def _mix_axis(snapshot: RunSnapshot) -> _Axis:
    space = snapshot.space.mix
    if not isinstance(space, MixRange):
        listed = sorted(space, key=lambda m: m.domain_share)
        shares = [m.domain_share for m in listed]
        return _Axis(
            labels=[str(m) for m in listed],
            index=lambda share: min(range(len(shares)), key=lambda k: abs(shares[k] - share)),
            binned=False,
        )
    low, high = sorted((space.low.domain_share, space.high.domain_share))
    edges = _edges(low, high, MIX_BINS, log=False)
    labels = [f"{ratio_label(a)}–{ratio_label(b)}" for a, b in itertools.pairwise(edges)]
    return _Axis(labels=labels, index=lambda share: _bin(edges, share), binned=True)


def _edges(low: float, high: float, bins: int, *, log: bool) -> list[float]:
    if log:
        return list(np.geomspace(low, high, bins + 1))
    return list(np.linspace(low, high, bins + 1))


def _bin(edges: list[float], value: float) -> int:
    return min(max(int(np.searchsorted(edges, value, side="right")) - 1, 0), len(edges) - 2)


def close(figure: Figure) -> None:
    plt.close(figure)
