"""`sweep report`: a self-contained HTML page, a PNG per plot and a short report.md for one run, or
one comparison page over several runs.

The page embeds its plots as data URIs and its CSS inline and loads nothing else, so it opens from
disk, offline, and can be mailed as one file. Everything shown comes from a RunSnapshot (one read of
the study), so a report of a running sweep is a consistent picture of that moment.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from matplotlib.figure import Figure

from reports import plots
from reports.decision import decision_lines
from reports.downstream import drop_figure, score_cell, tasks_of
from reports.snapshot import RunSnapshot, load_run, spec_differences
from reports.tables import row_notes, spread_lines
from sweep.choice.confirmation import Against, Measured
from sweep.choice.feasible import is_feasible
from sweep.choice.points import point_summaries
from sweep.choice.verdict import numbers, spread
from sweep.files.outputs import check_own_folder
from sweep.files.records import write_whole
from sweep.files.rundir import RunDir
from sweep.study.row import TrialRow
from train_entry.optimizer import peak_lr

if TYPE_CHECKING:
    from sweep.promote.launch.watch_report import WatchRecord

REPORT_DIR = "report"
INDEX_HTML = "index.html"
REPORT_MD = "report.md"
MAX_FOLDER_NAME = 200
"""Characters in a comparison folder's name: below the 255 bytes most file systems allow."""
PLOT_DPI = 110
"""Sharp on a laptop screen while a page of five plots stays around 1 MB."""


@dataclass(frozen=True, kw_only=True)
class Plot:
    name: str
    """File stem of its PNG in the report folder."""
    title: str
    caption: str
    png: bytes

    @property
    def file(self) -> str:
        return f"{self.name}.png"

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


def write_run_report(run_dir: Path, output: Path | None = None) -> Path:
    """Writes one run's report (default RUN/report/, or `output`, checked by the caller: sweep.files.outputs);
    returns the path of its index.html."""
    folder = output or own_report_dir(run_dir)
    snapshot = load_run(run_dir)
    plot_list = _run_plots(snapshot)
    context = {"run": _run_context(snapshot), "plots": plot_list, "table": _table(snapshot)}
    return write_page(folder, "run", context, plot_list)


def own_report_dir(run_dir: Path) -> Path:
    """RUN/report/, once proven to be a real folder of the run (or not there yet)."""
    folder = run_dir / REPORT_DIR
    check_own_folder(folder, under=run_dir)
    return folder


def write_comparison_report(run_dirs: Sequence[Path], output: Path | None = None) -> Path:
    """Writes one page overlaying the runs' fronts and optima; returns the path of its index.html."""
    snapshots = [load_run(run_dir) for run_dir in run_dirs]
    output = output or comparison_dir(run_dirs, [snapshot.name for snapshot in snapshots])
    differences = spec_differences(snapshots)
    plot_list = [
        make_plot(
            "front",
            "domain_gain vs forgetting, all runs",
            "Each run's completed trials, Pareto front and best observed trial (star) in its own colour; "
            "dashed: the forgetting budget.",
            lambda: plots.front_figure(snapshots),
        )
    ]
    runs = []
    for snapshot in snapshots:
        run = _run_context(snapshot)
        run["differs"] = differences[snapshot.name]
        own = snapshot.run_dir / REPORT_DIR / INDEX_HTML
        run["own_report"] = os.path.relpath(own, output) if own.is_file() else None
        runs.append(run)
    return write_page(output, "compare", {"runs": runs, "plots": plot_list}, plot_list)


def comparison_dir(run_dirs: Sequence[Path], names: Sequence[str]) -> Path:
    """runs/compare-<a>-vs-<b>/report beside the first run: a sibling folder, never inside a run, and a real folder
    (not a link that leads elsewhere, nor a file in its place).

    Many runs' names would make a folder name longer than a file system allows: the folder is then
    named by a digest of them.
    """
    folder = "compare-" + "-vs-".join(names)
    if len(folder) > MAX_FOLDER_NAME:
        folder = f"compare-{len(names)}-runs-{hashlib.sha256(folder.encode()).hexdigest()[:12]}"
    path = run_dirs[0].parent / folder / REPORT_DIR
    check_own_folder(path, under=run_dirs[0].parent)
    return path


def write_page(folder: Path, template: str, context: dict[str, Any], plot_list: list[Plot]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    environment = Environment(
        loader=PackageLoader("reports", "templates"),
        autoescape=lambda name: name is not None and name.endswith(".html.j2"),
        undefined=StrictUndefined,  # a misspelt field fails the report instead of showing a blank
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    for plot in plot_list:
        write_whole(folder / plot.file, plot.png)
    write_whole(folder / REPORT_MD, environment.get_template(f"{template}.md.j2").render(context))
    index = folder / INDEX_HTML
    write_whole(index, environment.get_template(f"{template}.html.j2").render(context))
    return index


def make_plot(name: str, title: str, caption: str, draw: Callable[[], Figure]) -> Plot:
    figure = draw()
    try:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=PLOT_DPI)
    finally:
        plots.close(figure)
    return Plot(name=name, title=title, caption=caption, png=buffer.getvalue())


def _run_plots(snapshot: RunSnapshot) -> list[Plot]:
    budget = f"{snapshot.plan.forgetting_budget:.3g}"
    plot_list = [
        make_plot(
            "front",
            "domain_gain vs forgetting",
            f"Completed trials on the validation pool (dots), the search's Pareto front (line), the budget {budget} "
            "(dashed), the best observed trial (star), the pick where the surrogate predicts it with its 90 % intervals "
            "(diamond) and its confirmation trials' mean ± sd at fresh seeds on their draw (plus: within the budget; "
            "X: over). Crosses: pruned or diverged trials at their last evaluation; they never qualify. Under the "
            "title: why the pick is not the best observed trial.",
            lambda: plots.front_figure([snapshot]),
        ),
        make_plot(
            "heatmap_domain_gain",
            "domain_gain over lr_fraction × mix",
            "Mean final domain_gain of the completed trials on the pool in each cell (n: how many). Darker is better. "
            'Grey: no completed trial ("stopped early": only pruned or diverged ones).',
            lambda: plots.heatmap_figure(snapshot, "domain_gain"),
        ),
        make_plot(
            "heatmap_forgetting",
            "forgetting over lr_fraction × mix",
            f"Mean final forgetting of the completed trials on the pool in each cell. Darker is better (less "
            f"forgetting); the budget is {budget}.",
            lambda: plots.heatmap_figure(snapshot, "forgetting"),
        ),
        *_downstream_plots(snapshot),
    ]
    if snapshot.surrogate is not None:
        plot_list.append(
            make_plot(
                "surrogate",
                "the surrogate and the pick",
                "Predicted domain_gain of the Gaussian process fitted to the trials (white dots: the completed ones), "
                "over log lr_fraction and log general:domain. The red line bounds the region where a re-run is within "
                "the forgetting budget with the pick rule's probability; the diamond is the pick, the star the best "
                "observed trial, an X a candidate its confirmation trials found over the budget.",
                lambda: plots.surrogate_figure(snapshot),
            )
        )
    if snapshot.histories:
        plot_list.append(
            make_plot(
                "curves",
                "learning curves",
                "domain_loss and general_loss at every interim evaluation (the validation pool's interim windows) "
                "against tokens read, starting from the base's own "
                "loss (dotted) at 0 tokens. Each line ends with its trial number; pruned (X) and diverged (▼) trials "
                "are marked where they stopped; the best observed trial is the thick black line.",
                lambda: plots.curves_figure(snapshot),
            )
        )
    return plot_list + _watched_plots(snapshot)


def _watched_plots(snapshot: RunSnapshot) -> list[Plot]:
    """The latest watched job's evaluations against the prediction; none before anything was promoted and watched."""
    if not RunDir(snapshot.run_dir).plans():
        return []
    # Imported here, and only for a promoted run: the watch record's types are the job's, which reach megatron-core
    # through the plan (~4 s of CPU), and neither `sweep status` nor a sweep's own report may pay for them.
    from sweep.promote.launch.watch_report import latest_record

    watched = latest_record(snapshot.run_dir)
    return [] if watched is None else [_watch_plot(snapshot, *watched)]


def _downstream_plots(snapshot: RunSnapshot) -> list[Plot]:
    """Beside the trade-off, each downstream task's drop against forgetting; none when no trial was scored."""
    if not tasks_of(snapshot.rows):
        return []
    return [
        make_plot(
            "downstream",
            "downstream drop vs forgetting",
            "Each downstream task's drop (the base's score minus the trial's, on the same examples; above 0 is "
            "worse) against forgetting, for the completed trials on the pool, with the drop's paired standard "
            "error; dashed: the forgetting budget and the task's drop budget (objective.downstream_budget).",
            lambda: drop_figure(snapshot.rows, snapshot.plan.forgetting_budget, snapshot.plan.downstream_budget),
        )
    ]


def _watch_plot(snapshot: RunSnapshot, path: Path, record: WatchRecord) -> Plot:
    from reports import watch_plot

    over = sum(1 for row in record.evaluations if row.overshoots)
    return make_plot(
        "watch",
        "the full run's forgetting against the proxies and the prediction",
        f"Job {record.job_id}'s forgetting at its {len(record.evaluations)} evaluation(s) after the base's (black; "
        f"red X: the {over} over the predicted upper bound), the plan's predicted trajectory (dashed) and its upper "
        "bound (band), and the completed proxy trials (blue; the pick's in orange), each against the share of its "
        f"own run's tokens. As `sweep promote watch` last read the job's log, kept in {path}.",
        lambda: watch_plot.watch_figure(snapshot, record),
    )


def _run_context(snapshot: RunSnapshot) -> dict[str, Any]:
    selection = snapshot.selection
    summary = snapshot.summary
    cost = summary.cost
    budget = snapshot.plan.forgetting_budget
    best = selection.best_observed
    read_or_saved = cost.tokens_used + cost.tokens_saved_by_pruning
    wall = sum(row.wall_seconds or 0.0 for row in snapshot.rows)
    spec = snapshot.spec
    return {
        "name": snapshot.name,
        "run_dir": str(snapshot.run_dir),
        "taken_at": snapshot.taken_at.isoformat(),
        "running": snapshot.running,
        "finished": snapshot.finished,
        "planned": snapshot.expected,
        "verdict": summary.verdict,
        "pick_cards": _pick_cards(snapshot),
        "pick_row": _pick_row(snapshot),
        "best_observed_verdict": selection.verdict,
        "best_observed": _trial(snapshot, best) if best else None,
        "why": _why(snapshot),
        "warnings": summary.boundary_warnings,
        # The headline and, when the cards show them, the predicted figures are already said above the list.
        "pick": [line for line in decision_lines(summary)[1:] if not line.startswith("  predicted domain_gain")],
        "rule": summary.pick.rule,
        "budget": f"{budget:.4g}",
        "counts": {status.value.lower(): n for status, n in summary.evidence.trials.items() if n},
        "cost": {
            "tokens_used": f"{cost.tokens_used:,}",
            "tokens_saved": f"{cost.tokens_saved_by_pruning:,}",
            "saved_share": f"{cost.tokens_saved_by_pruning / read_or_saved:.1%}" if read_or_saved else "0%",
            "full_trial_tokens": f"{cost.full_trial_tokens:,}",
            "trial_seconds": f"{wall:,.0f}",
            "downstream_seconds": f"{sum(row.downstream_seconds or 0.0 for row in snapshot.rows):,.0f}",
        },
        "downstream_tasks": tasks_of(snapshot.rows),
        "setup": {
            "base": spec.get("base", {}).get("model", "?"),
            "domain corpus": spec.get("data", {}).get("domain", {}).get("train", "?"),
            "search": f"sampler {snapshot.plan.search.sampler.type}, pruner {snapshot.plan.search.pruner.type}",
            "proxy": f"{snapshot.plan.proxy.steps} steps × {snapshot.plan.proxy.batch_size} × "
            f"{snapshot.plan.proxy.seq_len} tokens",
            "forgetting budget": f"{budget:.4g}",
            **({"downstream budget": ", ".join(f"{task} drop at most {limit:g}" for task, limit in
                                               sorted(snapshot.plan.downstream_budget.items()))}
               if snapshot.plan.downstream_budget else {}),
        },
        "without_history": snapshot.without_history,
        "spread": spread_lines([point for point in point_summaries(snapshot.rows) if point.n > 1]),
        "confirmations": _confirmations(snapshot),
    }


def _pick_cards(snapshot: RunSnapshot) -> list[dict[str, str]]:
    """The pick's cards, the report's first thing: its point and peak LR, what the surrogate predicts there with 90 %
    intervals and P, and what its confirmation trials measured at fresh seeds; empty without a pick."""
    summary = snapshot.summary
    pick, budget = summary.pick, snapshot.plan.forgetting_budget
    if pick.point is None:
        return []
    point = pick.point
    cards = [
        {"label": "lr_fraction", "value": f"{point.lr_fraction:.4g}",
         "meta": f"peak LR {peak_lr(point.lr_fraction, max_lr=snapshot.plan.max_lr):.3g}"},
        {"label": "mix general:domain", "value": point.mix, "meta": f"domain_share {point.domain_share:.3g}"},
    ]  # fmt: skip
    if pick.gain is not None and pick.forgetting is not None:
        gain, forgetting = pick.gain, pick.forgetting
        cards += [
            {"label": "predicted domain_gain", "value": f"{gain.mean:.4f}",
             "meta": f"90 % interval [{gain.low:.4f}, {gain.high:.4f}]"},
            {"label": "predicted forgetting", "value": f"{forgetting.mean:.4f}",
             "meta": f"90 % interval [{forgetting.low:.4f}, {forgetting.high:.4f}]; budget {budget:.4g}"},
            {"label": "P(a re-run within the budget)", "value": f"{pick.probability_within_budget:.2f}",
             "meta": f"the rule asks >= {pick.min_probability:g}"},
        ]  # fmt: skip
    held = summary.confirmation.rounds[-1] if summary.confirmation.rounds else None
    if held is not None and held.gain is not None and held.forgetting is not None:
        verdict = "within" if held.within_budget else "over"
        cards.append(
            {"label": f"at {len(held.trials)} fresh seeds", "value": f"{spread(held.forgetting)}",
             "meta": f"forgetting, {verdict} the budget; domain_gain {spread(held.gain)}; trials {numbers(held.trials)}"}
        )  # fmt: skip
    return cards


def _pick_row(snapshot: RunSnapshot) -> dict[str, str] | None:
    """The pick in a comparison's table: its point and its figures, measured at fresh seeds when it held, else the
    surrogate's prediction (or the best observed trial's one run)."""
    summary = snapshot.summary
    point = summary.pick.point
    if point is None:
        return None
    confirmed = summary.confirmation.confirmed
    if confirmed is not None and confirmed.gain is not None and confirmed.forgetting is not None:
        gain, forgetting, source = spread(confirmed.gain), spread(confirmed.forgetting), "confirmed at fresh seeds"
    elif summary.pick.gain is not None and summary.pick.forgetting is not None:
        gain, forgetting = f"{summary.pick.gain.mean:.4f}", f"{summary.pick.forgetting.mean:.4f}"
        source = f"predicted, {summary.confirmation.outcome.value}"
    else:
        gain, forgetting = f"{point.measured_gain:.4f}", f"{point.measured_forgetting:.4f}"
        source = f"one trial, {summary.confirmation.outcome.value}"
    return {
        "lr_fraction": f"{point.lr_fraction:.4g}",
        "peak_lr": f"{peak_lr(point.lr_fraction, max_lr=snapshot.plan.max_lr):.3g}",
        "mix": point.mix,
        "domain_gain": gain,
        "forgetting": forgetting,
        "source": source,
    }


def _why(snapshot: RunSnapshot) -> list[str]:
    """The evidence for the best observed trial, in sentences a person can check against the plots."""
    selection = snapshot.selection
    best = selection.best_observed
    evidence = snapshot.summary.evidence
    if best is None:
        return []
    lines = [
        (
            f"Highest domain_gain ({best.domain_gain:.4f}) of the {evidence.feasible_completed} completed "
            f"trial(s) within the forgetting budget {selection.forgetting_budget:.4g}; its forgetting is "
            f"{best.forgetting:.4f}."
        )
    ]
    runner_up = evidence.runner_up
    if runner_up is None:
        lines.append("No runner-up: it is the only completed trial within the budget.")
    else:
        lines.append(
            f"Runner-up: trial {runner_up.number} (lr_fraction {runner_up.lr_fraction:.4g}, mix "
            f"{snapshot.mix_label(runner_up)}) with domain_gain "
            f"{runner_up.domain_gain:.4f}, {best.domain_gain - runner_up.domain_gain:.4f} less, "
            f"forgetting {runner_up.forgetting:.4f}."
        )
    over = [row for row in selection.pareto if not is_feasible(row.forgetting, selection.forgetting_budget)]
    if over:
        nearest = over[0]
        lines.append(
            f"Beyond the budget, trial {nearest.number} would gain {nearest.domain_gain - best.domain_gain:.4f} "
            f"more but forgets {nearest.forgetting:.4f}."
        )
    return lines


def _confirmations(snapshot: RunSnapshot) -> list[dict[str, str]]:
    """Each confirmed candidate against what was predicted for it: P(within the budget) and whether its trials
    were, and where their means fell against the 90 % intervals predicted for them (a calibration table, one row a
    round)."""
    budget = snapshot.plan.forgetting_budget
    rows = []
    for point in snapshot.summary.confirmation.rounds:
        if point.gain is None or point.forgetting is None:
            continue
        rows.append(
            {
                "candidate": f"{point.round + 1} ({point.lr_fraction:.4g} @ {point.mix})",
                "text": point.text or "",
                "trials": numbers(point.trials),
                "p": "" if point.probability_within_budget is None else f"{point.probability_within_budget:.2f}",
                "within": f"{'yes' if point.within_budget else 'no'} (budget {budget:.4g})",
                "gain": _against_cell(point.gain, point.gain_interval, point.gain_against),
                "forgetting": _against_cell(point.forgetting, point.forgetting_interval, point.forgetting_against),
            }
        )
    return rows


def _against_cell(measured: Measured, interval: tuple[float, float] | None, against: Against | None) -> str:
    """ "0.1953 ± 0.0011 in [0.18, 0.22]", or "..., above [0.18, 0.19]" when the mean fell outside."""
    cell = spread(measured)
    if interval is None or against is None:
        return cell
    where = "in" if against is Against.INSIDE else f"{against.value} its interval"
    return f"{cell} {where} [{interval[0]:.4f}, {interval[1]:.4f}]"


def _trial(snapshot: RunSnapshot, row: TrialRow) -> dict[str, Any]:
    return {
        "number": str(row.number),
        "text": row.text or "",
        "is_pick": row.number in snapshot.summary.pick_trials,
        "lr_fraction": f"{row.lr_fraction:.4g}",
        "peak_lr": f"{row.peak_lr:.3g}",
        "mix": snapshot.mix_label(row),
        "domain_share": f"{row.domain_share:.3g}",
        "domain_gain": f"{row.domain_gain:.4f}",
        "forgetting": f"{row.forgetting:.4f}",
    }


def _table(snapshot: RunSnapshot) -> list[dict[str, str]]:
    best = snapshot.selection.best_observed
    pick_trials = set(snapshot.summary.pick_trials)
    return [
        {
            "number": str(row.number),
            "status": row.status.value,
            "role": row.role.value,
            "pick": "yes" if row.number in pick_trials else "",
            "best_observed": "yes" if best is not None and row.number == best.number else "",
            "lr_fraction": f"{row.lr_fraction:.4g}",
            "peak_lr": f"{row.peak_lr:.3g}",
            "mix": snapshot.mix_label(row),
            "domain_gain": _number(row.domain_gain),
            "forgetting": _number(row.forgetting),
            "text": row.text or "",
            "best": "" if row.best_domain_gain is None else f"{row.best_domain_gain:.4f} @ {row.best_step}",
            "steps": "" if row.steps is None else str(row.steps),
            "tokens": "" if row.tokens_seen is None else f"{row.tokens_seen:,}",
            "wall": "" if row.wall_seconds is None else f"{row.wall_seconds:.0f}",
            "reason": row_notes(row),
            "downstream": "; ".join(f"{task} {score_cell(score)}" for task, score in (row.downstream or {}).items()),
        }
        for row in snapshot.rows
    ]


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"
