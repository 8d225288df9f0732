"""The report of a ladder run: the picks against parameter count with the lines extrapolated to the target, the
prediction of the largest rung against what it measured, and the extrapolation at the target's size.

A pure reader of runs/<ladder>/ladder.json (each rung's own report is its run directory's, `sweep report
runs/<ladder>/rungs/<rung>`); the target's N is counted as the rungs' were (sweep.scale).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from reports import ladder_plots
from reports.report import REPORT_DIR, make_plot, write_page
from sweep.files.rundir import RunDir
from sweep.ladder.fit import Interval, Quantity
from sweep.ladder.record import LadderSummary, RungResult, read_ladder
from sweep.promote.targets import load_target
from sweep.scale import non_embedding_params

LABELS = {
    Quantity.LOG_LR_FRACTION: "lr_fraction",
    Quantity.LOG_MIX_RATIO: "mix general:domain",
    Quantity.GAIN: "domain_gain at the pick",
    Quantity.FORGETTING: "forgetting at the pick",
    Quantity.REFERENCE_GAIN: "domain_gain at the reference point",
    Quantity.REFERENCE_FORGETTING: "forgetting at the reference point",
}


def shown(quantity: Quantity, value: float | None) -> str:
    """A quantity as a person reads it: lr_fraction and the ratio back from their logs."""
    if value is None:
        return "—"
    if quantity is Quantity.LOG_LR_FRACTION:
        return f"{math.exp(value):.4g}"
    if quantity is Quantity.LOG_MIX_RATIO:
        ratio = math.exp(value)
        return f"{ratio:.3g}:1" if ratio >= 1 else f"1:{1 / ratio:.3g}"
    return f"{value:.4f}"


def interval_text(quantity: Quantity, interval: Interval) -> str:
    if interval.low is None:
        return f"{shown(quantity, interval.mean)} (no interval: 0 degrees of freedom)"
    low, high = sorted((interval.low, interval.high))
    if quantity is Quantity.LOG_MIX_RATIO:  # the larger log ratio is the more general-heavy mix
        low, high = high, low
    return f"{shown(quantity, interval.mean)} [{shown(quantity, low)}, {shown(quantity, high)}]"


def write_ladder_report(run_dir: Path, output: Path | None = None) -> Path:
    """Writes the ladder's report (default RUN/report/); returns the path of its index.html."""
    summary = read_ladder(RunDir(run_dir))
    target = load_target(summary.target)
    target_n = non_embedding_params(target.model)
    plot_list = []
    if summary.rungs:
        plot_list.append(
            make_plot(
                "optimum_vs_size",
                "the pick against parameter count",
                f"Each rung's pick (dots) against its non-embedding parameter count N, the least-squares line in log N "
                f"and its 90 % prediction band out to {target.name} (N {target_n:,}, dotted line). Open diamond: the "
                "largest rung as predicted from the smaller ones before its trials ran, with its interval.",
                lambda: ladder_plots.ladder_figure(summary, target_n=target_n, target_name=target.name),
            )
        )
    context = {"ladder": _context(summary, run_dir, target.name, target_n), "plots": plot_list}
    return write_page(output or run_dir / REPORT_DIR, "ladder", context, plot_list)


def _context(summary: LadderSummary, run_dir: Path, target: str, target_n: int) -> dict[str, Any]:
    at_target = summary.extrapolate(target_n)
    dof = next(iter(at_target.values())).dof if at_target else None
    return {
        "name": run_dir.name,
        "run_dir": str(run_dir),
        "finished": summary.finished,
        "done": len(summary.rungs),
        "planned": summary.planned,
        "target": target,
        "target_n": f"{target_n:,}",
        "budget": f"{summary.forgetting_budget:g}",
        "reference": f"lr_fraction {summary.reference_lr_fraction:.4g}, mix {summary.reference_mix}",
        "tokens_per_parameter": f"{summary.trial_tokens_per_parameter:.3g}",
        "pretrain_tokens_per_parameter": (
            "" if summary.pretrain_tokens_per_parameter is None else f"{summary.pretrain_tokens_per_parameter:.3g}"
        ),
        "rungs": [_rung_row(rung) for rung in summary.rungs],
        "prediction": _prediction_rows(summary),
        "prediction_note": summary.prediction_note,
        "extrapolation": [
            {"quantity": LABELS[quantity], "value": interval_text(quantity, interval)}
            for quantity, interval in at_target.items()
        ],
        "dof": dof,
        "warnings": _warnings(summary, at_target),
    }


def _rung_row(rung: RungResult) -> dict[str, str]:
    return {
        "name": rung.name,
        "parameters": f"{rung.parameters:,}",
        "tokens": f"{rung.trial_tokens:,}",
        "source": rung.pick_source.value if rung.pick_source is not None else "no pick",
        **{quantity.value: shown(quantity, rung.values.get(quantity)) for quantity in Quantity},
    }


def _prediction_rows(summary: LadderSummary) -> list[dict[str, str]]:
    """Predicted against measured at the largest rung, one row per quantity."""
    prediction, validation = summary.prediction, summary.validation
    if prediction is None:
        return []
    rows = []
    for quantity, interval in prediction.estimates.items():
        measured = validation.measured.get(quantity) if validation else None
        at_point = validation.at_predicted_point.get(quantity) if validation else None
        surrogate = validation.surrogate_at_predicted_point.get(quantity) if validation else None
        inside = validation.within_interval.get(quantity) if validation else None
        rows.append(
            {
                "quantity": LABELS[quantity],
                "predicted": interval_text(quantity, interval),
                "measured": shown(quantity, measured),
                "inside": {True: "yes", False: "NO", None: "—"}[inside],
                "at_point": shown(quantity, at_point) if at_point is not None else "—",
                "surrogate": shown(quantity, surrogate) if surrogate is not None else "—",
            }
        )
    return rows


def _warnings(summary: LadderSummary, at_target: dict[Quantity, Interval]) -> list[str]:
    warnings = []
    forgetting = at_target.get(Quantity.FORGETTING)
    if forgetting is not None and forgetting.high is not None and forgetting.high > summary.forgetting_budget:
        warnings.append(
            f"The extrapolated forgetting's 90 % interval [{forgetting.low:.4f}, {forgetting.high:.4f}] crosses the "
            f"forgetting budget {summary.forgetting_budget:g}."
        )
    if at_target and next(iter(at_target.values())).dof <= 1:
        warnings.append(
            f"{len(summary.rungs)} rungs leave {max(len(summary.rungs) - 2, 0)} degree(s) of freedom: the intervals "
            "are wide (t quantile 6.31 at 90 % with one) and say how little three sizes can pin down."
        )
    return warnings


def print_ladder(console: Console, summary: LadderSummary) -> None:
    """The rungs' picks and the prediction of the largest, as `sweep run` ends a ladder."""
    table = Table(title="ladder: each rung's pick")
    for column in ("rung", "N", "trial tokens", "source", "lr_fraction", "mix", "domain_gain", "forgetting"):
        table.add_column(column, justify="left" if column in ("rung", "source", "mix") else "right")
    for rung in summary.rungs:
        row = _rung_row(rung)
        table.add_row(
            *(row[key] for key in ("name", "parameters", "tokens", "source")),
            *(row[quantity.value] for quantity in list(Quantity)[:4]),
        )
    console.print(table)
    for line in prediction_lines(summary):
        console.print(line, highlight=False)


def prediction_lines(summary: LadderSummary) -> list[str]:
    """Whether the largest rung's prediction is written yet and, once that rung is measured, predicted against
    measured: for the end of `sweep run` and for `sweep status` of a ladder."""
    largest = summary.planned[-1]
    prediction = summary.prediction
    if prediction is None:
        note = summary.prediction_note or f"not written yet (it is written before {largest} starts)"
        return [f"prediction of {largest}: {note}"]
    written = f"{prediction.written_at:%Y-%m-%d %H:%M} UTC from {', '.join(prediction.from_rungs)}"
    lines = [f"prediction of {largest}: written {written}, enqueued as its first trial: {prediction.enqueued}"]
    for row in _prediction_rows(summary):
        measured = f", measured {row['measured']} (inside the interval: {row['inside']})" if summary.validation else ""
        lines.append(f"  {largest} {row['quantity']}: predicted {row['predicted']}{measured}")
    return lines
