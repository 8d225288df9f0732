"""The ladder report's figures: the law against every evaluation it was fitted to, and the critical domain share it
gives against N out to the target (matplotlib's Agg backend, as reports/plots.py)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from reports import plots  # noqa: F401  (selects the Agg backend before pyplot is used)
from sweep.law.model import Law
from sweep.law.runs import Trend
from sweep.law.table import ObservationTable


def fit_figure(table: ObservationTable, law: Law) -> Figure:
    """Measured against fitted forgetting and domain_gain, one colour per rung."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 4.4), layout="constrained")
    where = (table.parameters, table.lr_fraction, table.time, table.domain_share)
    fitted = {
        "forgetting": (table.forgetting, law.forgetting(*where)),
        "domain_gain": (table.domain_gain, law.domain_gain(*where)),
    }
    for ax, (name, (measured, law_value)) in zip(axes, fitted.items()):
        for rung in table.rungs:
            mine = table.rung == rung
            ax.scatter(law_value[mine], measured[mine], s=9, alpha=0.7, label=rung)
        ends = [float(np.min([measured, law_value])), float(np.max([measured, law_value]))]
        ax.plot(ends, ends, color="#4a5568", linewidth=1, linestyle=":")
        ax.set_xlabel(f"{name}, the law's")
        ax.set_ylabel(f"{name}, measured")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best", title="rung", title_fontsize=7)
    figure.suptitle(f"every evaluation of every trial against the fitted law (form {law.form})")
    return figure


def trend_figure(trend: Trend) -> Figure:
    """The critical domain share at each rung's N and the target's."""
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    known = [entry for entry in trend.shares if entry.share is not None]
    ax.plot([entry.parameters for entry in known], [entry.share for entry in known], marker="o", color="#2b6cb0")
    ax.set_xscale("log")
    ax.set_xlabel("non-embedding parameters N")
    ax.set_ylabel("critical domain share")
    ax.set_ylim(0.0, 1.0)
    ax.grid(alpha=0.3, which="both")
    ax.set_title(f"fitted: {trend.direction}; published: grows (arXiv:2407.17467)", fontsize=9)
    return figure
