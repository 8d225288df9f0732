"""The ladder report's figure: each fitted quantity against parameter count, with its line and 90 % band drawn
out to the target's size (matplotlib's Agg backend, as reports/plots.py)."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from reports import plots  # noqa: F401  (selects the Agg backend before pyplot is used)
from sweep.ladder.fit import Quantity
from sweep.ladder.record import LadderSummary

PANELS = (
    (Quantity.LOG_LR_FRACTION, "lr_fraction (log)", True),
    (Quantity.LOG_MIX_RATIO, "general:domain ratio (log)", True),
    (Quantity.GAIN, "domain_gain at the pick", False),
    (Quantity.FORGETTING, "forgetting at the pick", False),
)
"""(quantity, axis label, shown on a log axis: the fit's value is a log, drawn back as the ratio or fraction)."""
BAND_COLOUR = "#2b6cb0"
PREDICTION_COLOUR = "#dd6b20"


def ladder_figure(summary: LadderSummary, *, target_n: int, target_name: str) -> Figure:
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 2, figsize=(10, 7.2), layout="constrained")
    for ax, (quantity, label, logged) in zip(axes.flat, PANELS):
        _panel(ax, summary, quantity, label=label, logged=logged, target_n=target_n, target_name=target_name)
    figure.suptitle(f"the pick against non-embedding parameters N, extrapolated to {target_name}")
    return figure


def _panel(
    ax: Axes, summary: LadderSummary, quantity: Quantity, *, label: str, logged: bool, target_n: int, target_name: str
) -> None:
    back = math.exp if logged else float
    having = [rung for rung in summary.rungs if quantity in rung.values]
    ax.scatter(
        [rung.parameters for rung in having],
        [back(rung.values[quantity]) for rung in having],
        color="#111111",
        zorder=3,
    )
    for rung in having:
        ax.annotate(
            rung.name, (rung.parameters, back(rung.values[quantity])), textcoords="offset points", xytext=(4, 4)
        )
    fit = summary.fits.get(quantity)
    if fit is not None:
        sizes = np.geomspace(min(rung.parameters for rung in having), target_n, 60)
        lines = [fit.predict(float(n)) for n in sizes]
        ax.plot(sizes, [back(line.mean) for line in lines], color=BAND_COLOUR, label=f"fit ({fit.dof} dof)")
        if lines[0].low is not None:
            ax.fill_between(
                sizes,
                [back(line.low) for line in lines],
                [back(line.high) for line in lines],
                color=BAND_COLOUR,
                alpha=0.15,
                label="90 % prediction band",
            )
    _prediction(ax, summary, quantity, back)
    if quantity is Quantity.FORGETTING:
        ax.axhline(summary.forgetting_budget, color="#c53030", linestyle="--", linewidth=1, label="budget")
    ax.axvline(target_n, color="#4a5568", linestyle=":", linewidth=1, label=target_name)
    ax.set_xscale("log")
    if logged:
        ax.set_yscale("log")
    ax.set_xlabel("non-embedding parameters N")
    ax.set_ylabel(label)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="best")


def _prediction(ax: Axes, summary: LadderSummary, quantity: Quantity, back) -> None:
    prediction = summary.prediction
    if prediction is None or quantity not in prediction.estimates:
        return
    estimate = prediction.estimates[quantity]
    mean = back(estimate.mean)
    errors = None
    if estimate.low is not None:
        low, high = sorted((back(estimate.low), back(estimate.high)))
        errors = [[max(mean - low, 0.0)], [max(high - mean, 0.0)]]
    ax.errorbar(
        [prediction.parameters],
        [mean],
        yerr=errors,
        fmt="D",
        mfc="none",
        color=PREDICTION_COLOUR,
        capsize=4,
        label=f"{prediction.rung} predicted from {', '.join(prediction.from_rungs)}",
    )
