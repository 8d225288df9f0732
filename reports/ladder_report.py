"""The report of a ladder run: how each rung is matched to the target (the dimensionless ratios side by side), the
design every rung ran, the loss law with its fit per loss and per rung, its optimum at the target with intervals or
its refusal, leave-one-rung-out against the ladder's targets, and the critical share's trend beside the published one.

A pure reader of runs/<ladder>/ladder.json (each rung's own report is its run directory's, `sweep report
runs/<ladder>/rungs/<rung>`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from reports import ladder_plots
from reports.report import REPORT_DIR, make_plot, own_report_dir, write_page
from sweep.files.rundir import RunDir
from sweep.ladder.record import LadderSummary, read_ladder
from sweep.ladder.rungs import MISMATCH, mismatches
from sweep.law.lines import report_lines
from sweep.law.runs import LawFitReport
from sweep.target.scale import Ratios
from sweep.law.validate import (
    FORGETTING_ERROR,
    GAIN_SHORTFALL,
    LR_RATIO,
    SHARE_ERROR,
    UNCOVERED_FOLDS,
    LeaveOneRungOut,
)

MET = {True: "yes", False: "NO", None: "—"}


def write_ladder_report(run_dir: Path, output: Path | None = None) -> Path:
    """Writes the ladder's report (default RUN/report/); returns the path of its index.html."""
    folder = output or own_report_dir(run_dir)
    summary = read_ladder(RunDir(run_dir))
    plot_list = []
    if summary.fit is not None:
        fit = summary.fit
        plot_list = [
            make_plot(
                "law_fit",
                "the law against every evaluation",
                "Each evaluation's measured forgetting and domain_gain against the best-validated form's value at its "
                "N, peak LR, tokens and share, one colour per rung; on the diagonal the law is exact.",
                lambda: ladder_plots.fit_figure(summary.table(), fit.laws.best.law),
            ),
            make_plot(
                "critical_share",
                "the critical domain share against N",
                f"The largest domain share whose forgetting the law keeps within the budget, at each rung's N and at "
                f"{fit.prediction.target.name}'s, at the rungs' median final LR area; the published direction is "
                "that it grows with N.",
                lambda: ladder_plots.trend_figure(fit.trend),
            ),
        ]
    context = {"ladder": _context(summary, run_dir), "plots": plot_list}
    return write_page(folder, "ladder", context, plot_list)


def _context(summary: LadderSummary, run_dir: Path) -> dict[str, Any]:
    fit = summary.fit
    return {
        "name": run_dir.name,
        "run_dir": str(run_dir),
        "finished": summary.is_finished,
        "done": len(summary.finished),
        "planned": summary.planned,
        "target": summary.at_target.scale.name,
        "budget": f"{summary.forgetting_budget:g}",
        "design": design_line(summary),
        "ratios": _ratio_rows(summary),
        "mismatches": mismatches(summary.rungs, summary.at_target.ratios),
        "rungs": [_rung_row(summary, rung.name, rung.trials, rung.evaluations) for rung in summary.finished],
        "runs": summary.runs,
        "note": summary.note,
        "law": report_lines(fit) if fit is not None else [],
        "residuals": _residual_rows(fit) if fit is not None else [],
        "folds": _fold_rows(fit.validation) if fit is not None and fit.validation is not None else [],
        "targets": _targets(fit.validation) if fit is not None and fit.validation is not None else "",
    }


def design_line(summary: LadderSummary) -> str:
    """The design every rung ran and how each is matched, in one sentence."""
    search, space = summary.search, summary.space
    pruner, replicates = search.pruner.model_dump_json(), search.replicates.model_dump_json()
    guard = search.forgetting_guard.model_dump_json() if search.forgetting_guard is not None else "none"
    return (
        f"every rung runs the same grid, lr_fraction {space.lr_fraction} x mix {[str(m) for m in space.mix]}, with "
        f"pruner {pruner}, forgetting guard {guard}, replicates {replicates}; the same steps and schedule with a "
        f"batch in proportion to N, trials reading {summary.at_target.cpt_share:.3g} of their base's pretraining "
        "tokens (the full run's share of the target's), each base pretrained at its own peak LR"
    )


def _rung_row(summary: LadderSummary, name: str, trials: int, evaluations: int) -> dict[str, Any]:
    """A finished rung's share of the law's rows, and its base's losses: how far from converged each base is."""
    first = next((row for row in summary.observations if row.rung == name), None)
    base = "—" if first is None else f"{first.base_general_loss:.3f} / {first.base_domain_loss:.3f}"
    return {"name": name, "trials": trials, "evaluations": evaluations, "base": base}


def _ratio_rows(summary: LadderSummary) -> list[dict[str, str]]:
    target = summary.at_target
    rows = [
        _ratio_row(rung.name, rung.parameters, rung.ratios, target.ratios, f"{rung.max_lr:.4g}", rung.batch_size)
        for rung in summary.rungs
    ]
    scale = target.scale
    return rows + [_ratio_row(f"{scale.name} (target)", scale.parameters, target.ratios, None, "—", None)]


def _ratio_row(
    name: str, parameters: float, ratios: Ratios, target: Ratios | None, max_lr: str, batch: int | None
) -> dict[str, str]:
    def cell(field: str, digits: str) -> str:
        value = float(getattr(ratios, field))
        text = f"{value:{digits}}"
        if target is not None:
            theirs = float(getattr(target, field))
            far = value <= 0 or theirs <= 0 or max(value / theirs, theirs / value) > MISMATCH
            text += " (>2x)" if far and value != theirs else ""
        return text

    return {
        "name": name,
        "parameters": f"{parameters:,.0f}",
        "max_lr": max_lr,
        "batch": "—" if batch is None else str(batch),
        "pretrain": cell("pretrain_tokens_per_parameter", ".3g"),
        "cpt": cell("tokens_per_parameter", ".3g"),
        "share": cell("cpt_share", ".3g"),
        "steps": cell("steps", ",.0f"),
        "warmup": cell("warmup_share", ".3g"),
    }


def _residual_rows(fit: LawFitReport) -> list[dict[str, str]]:
    law = fit.laws.best.law
    domain = {residual.rung: residual for residual in law.domain_quality.rungs}
    return [
        {
            "rung": general.rung,
            "rows": str(general.rows),
            "general": f"{general.mean:+.2g} / {general.rms:.2g}",
            "domain": f"{domain[general.rung].mean:+.2g} / {domain[general.rung].rms:.2g}",
        }
        for general in law.general_quality.rungs
    ]


def _fold_rows(validation: LeaveOneRungOut) -> list[dict[str, str]]:
    rows = []
    for fold in validation.folds:
        errors, predicted, own = fold.errors, fold.predicted, fold.own
        there = fold.measured_at_predicted or fold.own_at_predicted
        met = errors.met
        point = predicted.optimum
        rows.append(
            {
                "rung": fold.rung,
                "predicted": _point(point) + (f"; refused: {predicted.refusal.message}" if predicted.refusal else ""),
                "own": _point(own) + (" (outside the box)" if fold.own_toward else ""),
                "lr": _value(errors.lr_ratio, "x{:.2f}") + f" {MET[met['lr_fraction']]}",
                "share": _value(errors.share_error, "{:+.3f}") + f" {MET[met['domain_share']]}",
                "forgetting": (
                    f"{point.forgetting:.4f} vs {there.forgetting:.4f}: {errors.forgetting_error:+.4f} "
                    f"{MET[met['forgetting']]}"
                    if point and there
                    else "—"
                ),
                "gain": _value(errors.gain_shortfall, "{:.4f}") + f" {MET[met['domain_gain']]}",
                "covered": MET[fold.coverage.complete] + _spans(predicted.intervals),
            }
        )
    return rows


def _spans(intervals) -> str:
    """The intervals a fold is judged by: how wide they are says how much their covering tells."""
    if intervals is None:
        return ""
    lr, share = intervals.lr_fraction, intervals.domain_share
    return f" (lr_fraction {lr.low:.3g} to {lr.high:.3g}, share {share.low:.3g} to {share.high:.3g})"


def _point(point) -> str:
    if point is None:
        return "none"
    return f"lr_fraction {point.lr_fraction:.3g}, share {point.domain_share:.3f}"


def _value(value: float | None, form: str) -> str:
    return "—" if value is None else form.format(value)


def _targets(validation: LeaveOneRungOut) -> str:
    return (
        f"Targets per fold: lr_fraction within x{LR_RATIO}, domain share within ±{SHARE_ERROR}, forgetting at the "
        f"predicted point within ±{FORGETTING_ERROR} of the rung's there, the rung's gain there at most "
        f"{GAIN_SHORTFALL} below its own optimum's; 90 % intervals covering in all folds but at most "
        f"{UNCOVERED_FOLDS}: {validation.covered} of {len(validation.folds)} covered "
        f"({'met' if validation.coverage_met else 'NOT met'})."
    )


def print_ladder(console: Console, summary: LadderSummary) -> None:
    """The law, its answer at the target and its folds, as `sweep run` ends a ladder and `sweep status` shows one."""
    for line in ladder_lines(summary):
        console.print(line, highlight=False)


def ladder_lines(summary: LadderSummary) -> list[str]:
    lines = [f"matched to {summary.at_target.scale.name} only in part: {line}" for line in mismatches(
        summary.rungs, summary.at_target.ratios)]  # fmt: skip
    if summary.fit is not None:
        return lines + report_lines(summary.fit)
    if summary.is_finished:
        return lines + [summary.note or "no law"]
    return lines + [f"law: fitted once every rung has finished ({len(summary.finished)} of {len(summary.rungs)})"]
