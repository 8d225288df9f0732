"""The watch plot: the proxies' forgetting, the plan's predicted trajectory with its upper bound, and the full run's
measured forgetting on one set of axes, from the watch record `sweep promote watch` kept (watch.json).

Runs some 10^4 times apart in tokens share one axis as the share of each run's own tokens: a proxy trial's of its
own, the prediction's and the full run's of the full run's (the record's run_tokens). The pick's trials are drawn in
the pick's colour, as on the learning curves (reports/plots.py).
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from reports.decision_marks import PICK_COLOUR
from reports.plots import BEST_COLOUR, STATUS_COLOURS
from reports.snapshot import RunSnapshot
from sweep.promote.launch.watch_report import WatchRecord
from sweep.study.record import Status

OVER_COLOUR = "#c53030"
"""An evaluation over the predicted upper bound: the colour of a diverged trial, of things gone wrong."""


def watch_figure(snapshot: RunSnapshot, record: WatchRecord) -> Figure:
    figure, ax = plt.subplots(figsize=(8, 5.2), layout="constrained")
    _proxies(ax, snapshot)
    prediction = record.watch.prediction
    if prediction is not None:
        shares = [point.tokens / record.run_tokens for point in prediction.points]
        ax.plot(shares, [p.forgetting for p in prediction.points], "--", color=PICK_COLOUR, label="predicted")
        ax.fill_between(
            shares,
            [p.forgetting for p in prediction.points],
            [p.forgetting_upper for p in prediction.points],
            color=PICK_COLOUR,
            alpha=0.2,
            label=f"predicted upper bound ({prediction.level:.0%})",
        )
    rows = [row for row in record.evaluations if math.isfinite(row.forgetting)]
    shares = [0.0] + [row.tokens_seen / record.run_tokens for row in rows]
    ax.plot(shares, [0.0] + [row.forgetting for row in rows], "o-", color=BEST_COLOUR, label=f"job {record.job_id}")
    over = [row for row in rows if row.overshoots]
    if over:
        ax.plot(
            [row.tokens_seen / record.run_tokens for row in over],
            [row.forgetting for row in over],
            "X",
            color=OVER_COLOUR,
            markersize=10,
            label="over the predicted upper bound",
        )
    ax.axhline(0.0, color="#4a5568", linestyle=":", linewidth=1.2)
    ax.set_xlabel("share of the run's own tokens (a proxy trial's; the full run's)")
    ax.set_ylabel("forgetting (general_loss / base − 1)")
    source = "no credible prediction" if prediction is None else prediction.source
    ax.set_title(f"forgetting: proxies, prediction and the full run\n{source[:110]}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return figure


def _proxies(ax, snapshot: RunSnapshot) -> None:
    """Each completed trial's forgetting from the base (0 at 0 tokens) to its end; the pick's trials stand out."""
    pick_trials = set(snapshot.summary.pick_trials)
    labelled = set()
    for row in snapshot.rows:
        history = snapshot.histories.get(row.number)
        if row.status is not Status.COMPLETED or not history or history[-1].tokens_seen <= 0:
            continue
        end = history[-1].tokens_seen
        points = [(m.tokens_seen / end, m.forgetting) for m in history if math.isfinite(m.forgetting)]
        is_pick = row.number in pick_trials
        label = "the pick's proxy trials" if is_pick else "proxy trials"
        ax.plot(
            [0.0, *(share for share, _ in points)],
            [0.0, *(value for _, value in points)],
            color=PICK_COLOUR if is_pick else STATUS_COLOURS[Status.COMPLETED],
            linewidth=2.0 if is_pick else 0.9,
            alpha=1.0 if is_pick else 0.45,
            label=None if label in labelled else label,
            gid="proxy",  # what the plot's test finds them by: only the first of each kind has a label
        )
        labelled.add(label)
