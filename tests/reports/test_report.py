"""The HTML report on real Optuna studies of scripted trials: what it shows, where it writes, what it refuses.

The browser check of a report from a real sweep is in test_report_browser.py.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
from html import escape
from pathlib import Path

import pytest
import yaml

from cli import main
from cli.errors import EXIT_INPUT_ERROR
from reports.report import (
    INDEX_HTML,
    REPORT_DIR,
    REPORT_MD,
    write_comparison_report,
    write_run_report,
)
from reports.snapshot import load_run, ratio_label
from sweep.files.compat import SPEC
from sweep.files.rundir import RunDir, RunRecord
from sweep.study.record import Attr
from sweep.study.run_study import open_run
from sweep.study.study import open_study
from sweep.study.trial import run_study_trial
from tests.sweep.scripted import BASE, DEFAULT_SPEC, STEPS, figures_of, scripted, spec_with

PLOTS = ("front.png", "heatmap_domain_gain.png", "heatmap_forgetting.png", "surrogate.png", "curves.png")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EXPECTED_MD = Path(__file__).parent / "expected" / "run_report.md"


CURVES = ((0.20, 0.010), (0.26, 0.015), (0.12, 0.004), (0.30, 0.040))
"""(final domain_gain, forgetting) of the four trials that run their full budget."""


def make_run(runs: Path, name: str, *, finish_all: bool = True, seed: int = 0, curves=CURVES, **search) -> Path:
    """runs/<name>/ as `sweep run` leaves it (run.json, spec.yaml, optuna.db), with scripted trials:
    four completed ones, one stopped by the forgetting guard, one diverged, and optionally one running."""
    run_dir = runs / name
    run_dir.mkdir(parents=True)
    spec = spec_with(
        sampler="random",
        seed=seed,
        pruner={"type": "none"},
        num_trials=7,
        forgetting_guard={"margin": 0.05, "min_steps": 50},
        replicates={"top": 0},
        **search,
    )
    run = RunDir(run_dir)
    record = RunRecord(study_name=name, storage=None)
    run.write_record(record)
    raw = yaml.safe_load(DEFAULT_SPEC.read_text())
    raw["search"]["seed"] = seed
    run.spec_copy.write_text(yaml.safe_dump(SPEC.stamped(raw)))
    sweep = open_study(spec.plan(), url=record.url(run), name=name)
    for top, forgetting in curves:
        gains = [top * (k + 1) / len(STEPS) for k in range(len(STEPS))]
        run_study_trial(sweep, sweep.ask().number, scripted(gains, forgetting=forgetting), base=BASE)
    run_study_trial(sweep, sweep.ask().number, scripted([0.05] * len(STEPS), forgetting=0.3), base=BASE)
    run_study_trial(sweep, sweep.ask().number, scripted([0.1] * len(STEPS), diverge_after=STEPS[3]), base=BASE)
    if not finish_all:
        sweep.ask()  # asked and never told: RUNNING, as in a sweep under way
    else:
        run_study_trial(sweep, sweep.ask().number, scripted([0.02] * len(STEPS), forgetting=0.001), base=BASE)
    return run_dir


@pytest.fixture
def runs(tmp_path) -> Path:
    return tmp_path / "runs"


def test_run_report_writes_a_self_contained_page_the_plots_and_markdown_naming_the_optimum(runs):
    run_dir = make_run(runs, "scripted")
    index = write_run_report(run_dir)

    assert index == run_dir / REPORT_DIR / INDEX_HTML
    html = index.read_text()
    for plot in PLOTS:
        png = (index.parent / plot).read_bytes()
        assert png.startswith(PNG_MAGIC)
        assert base64.b64encode(png).decode() in html  # the page embeds the very PNG next to it
    assert _external_references(html) == []

    snapshot = load_run(run_dir)
    optimum = snapshot.selection.best_observed
    assert optimum is not None and optimum.domain_gain == pytest.approx(0.26)  # 0.30 forgets over budget
    for text in (f"{optimum.lr_fraction:.4g}", optimum.mix, snapshot.selection.verdict, "Runner-up: trial 0"):
        assert text in html
    assert "Beyond the budget, trial 3" in html  # the front's next trial, which gains more but forgets 0.04
    markdown = (index.parent / REPORT_MD).read_text()
    assert snapshot.selection.verdict in markdown and "(front.png)" in markdown
    assert "still running" not in html
    # The pick leads, the best observed trial follows as evidence; the pick's trials are the highlighted rows.
    assert html.index(escape(snapshot.summary.verdict)) < html.index("Evidence: the best observed trial")
    assert html.index("<h2>The pick</h2>") < html.index(f'<div class="value">{optimum.lr_fraction:.4g}</div>')
    picked = re.findall(r'<tr class="pick"><td>(\d+) ◆', html)
    assert picked and [int(n) for n in picked] == snapshot.summary.pick_trials


def test_the_evidence_is_the_searchs_on_the_pool_and_every_row_names_its_text(runs):
    """Issue 49: a confirmation trial on an easier draw became the best observed trial, and the report then said
    "beyond the budget, trial 3 would gain 0.0034 more" where the search's own best observed trial stood 0.0343
    below it."""
    run_dir = make_run(runs, "with-a-draw")
    _, sweep = open_run(RunDir(run_dir))
    number = sweep.ask().number
    sweep.trial(number).set_user_attr(Attr.CONFIRMS.value, 0)
    sweep.trial(number).set_user_attr(Attr.SEED.value, 9)
    easier = scripted([0.28] * len(STEPS), forgetting=0.005)

    def on_its_draw(report):
        result = easier(report)
        return result.model_copy(update={"figures": figures_of(result.history[-1], text="draw 1")})

    run_study_trial(sweep, number, on_its_draw, base=BASE)
    markdown = (write_run_report(run_dir).parent / REPORT_MD).read_text()
    html = (run_dir / REPORT_DIR / INDEX_HTML).read_text()

    snapshot = load_run(run_dir)
    best = snapshot.selection.best_observed
    assert best.number == 1 and best.text == "pool"  # not the confirmation trial, which measured 0.28
    assert "Beyond the budget, trial 3 would gain 0.0400 more but forgets 0.0400." in markdown
    # the figure the report prints is best.json's own: its best observed trial and its front, neither on the draw
    from sweep.choice.best import write_best

    write_best(snapshot.summary, RunDir(run_dir))
    written = json.loads((run_dir / "best.json").read_text())
    front = {row["number"]: row for row in written["pareto_front"]}
    assert written["best_observed"]["number"] == 1 and number not in front
    assert f"would gain {front[3]['domain_gain'] - written['best_observed']['domain_gain']:.4f} more" in markdown
    assert "| 0.2600 | 0.0150 | pool | 0.02 | 1 |" in markdown
    assert '<td class="left">draw 1</td>' in html and html.count('<td class="left">pool</td>') >= 5


def test_a_confirmation_above_its_predicted_interval_is_said_so_in_the_reports_calibration_table(runs):
    """Issue 49: both confirmation trials measured above their predicted interval and nothing said so. The report's
    table of confirmation rounds sets each round's mean on its draw against the interval predicted for it."""
    from sweep.run.searcher import enqueue_confirmations

    run_dir = make_run(runs, "confirmed-above", confirmation={"seeds": 2, "candidates": 1})
    _, sweep = open_run(RunDir(run_dir))
    assert enqueue_confirmations(sweep) == 2
    pick = load_run(run_dir).summary.pick
    for _ in range(2):
        above = scripted([pick.gain.remeasured_high + 0.1] * len(STEPS), forgetting=pick.forgetting.mean)

        def on_its_draw(report, run=above):
            result = run(report)
            return result.model_copy(update={"figures": figures_of(result.history[-1], text="draw 1")})

        run_study_trial(sweep, sweep.ask().number, on_its_draw, base=BASE)
    markdown = (write_run_report(run_dir).parent / REPORT_MD).read_text()

    (held,) = load_run(run_dir).summary.confirmation.rounds
    low, high = held.gain_interval
    assert held.text == "draw 1" and held.gain.mean > high and held.within_budget
    (row,) = [line for line in markdown.splitlines() if line.startswith(f"| 1 ({held.lr_fraction:.4g} @ {held.mix})")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == "draw 1" and cells[5].endswith(f"above its interval [{low:.4f}, {high:.4f}]")
    assert f" in [{held.forgetting_interval[0]:.4f}, {held.forgetting_interval[1]:.4f}]" in cells[6]
    assert f"held, domain_gain above its predicted interval [{low:.4f}, {high:.4f}]" in markdown


def test_run_report_markdown_matches_the_stored_expected_file(runs):
    """A change to what the report says shows up in review. After a deliberate change, rewrite the
    file with CPT_SWEEP_UPDATE_EXPECTED=1 and read its diff."""
    run_dir = make_run(runs, "expected")
    markdown = (write_run_report(run_dir).parent / REPORT_MD).read_text()
    markdown = re.sub(r"Read from the study at \S+?([,.])", r"Read from the study at <time>\1", markdown)
    if os.environ.get("CPT_SWEEP_UPDATE_EXPECTED"):
        EXPECTED_MD.write_text(markdown)
    assert markdown == EXPECTED_MD.read_text()


def test_a_sweep_with_nothing_within_the_budget_says_so_and_names_the_least_forgetting_trial(runs):
    run_dir = make_run(runs, "infeasible", finish_all=False, curves=((0.2, 0.03), (0.25, 0.05)))
    snapshot = load_run(run_dir)
    assert snapshot.selection.best_observed is None
    html = write_run_report(run_dir).read_text()
    assert snapshot.selection.verdict in html and "least-forgetting Pareto trial is" in html
    assert "Runner-up" not in html


def test_report_agrees_with_best_json_written_by_the_same_functions(runs):
    from sweep.choice.best import write_best

    run_dir = make_run(runs, "agree")
    snapshot = load_run(run_dir)
    write_best(snapshot.summary, RunDir(run_dir))
    best = json.loads((run_dir / "best.json").read_text())
    html = write_run_report(run_dir).read_text()
    assert best["verdict"] in html
    assert f"{best['cost']['tokens_used']:,}" in html and f"{best['cost']['tokens_saved_by_pruning']:,}" in html


def test_report_of_a_running_sweep_says_it_is_a_snapshot(runs):
    run_dir = make_run(runs, "live", finish_all=False)
    html = write_run_report(run_dir).read_text()
    assert "still running: 6 of 7 trials have finished" in html
    assert "RUNNING" in html


def add_trial_without_history(run_dir: Path) -> int:
    """A completed trial as an older cpt-sweep stored it: its latest evaluation only. User attrs
    cannot be deleted, so such a trial is built directly."""
    _, sweep = open_run(RunDir(run_dir))
    trial = sweep.ask()
    trial.set_user_attr(Attr.LAST.value, {"step": 200, "tokens_seen": 9, "domain_gain": 0.1, "forgetting": 0.0})
    sweep.study.tell(trial.number, 0.1)
    return trial.number


def test_trials_recorded_before_histories_were_kept_are_named_on_the_page(runs):
    run_dir = make_run(runs, "mixed")
    number = add_trial_without_history(run_dir)
    html = write_run_report(run_dir).read_text()
    assert f"Trials {number} were recorded by a cpt-sweep that kept only" in html
    assert "curves.png" in html


def test_a_run_made_before_histories_were_kept_gets_a_report_without_curves_that_says_so(runs):
    run_dir = runs / "old"
    run_dir.mkdir(parents=True)
    run, record = RunDir(run_dir), RunRecord(study_name="old", storage=None)
    run.write_record(record)
    open_study(spec_with(sampler="random").plan(), url=record.url(run), name="old")
    add_trial_without_history(run_dir)

    index = write_run_report(run_dir)
    html = index.read_text()
    assert "This run was recorded by a cpt-sweep that kept only each trial's latest evaluation" in html
    assert not (index.parent / "curves.png").exists()


def test_a_mix_range_is_binned_and_shown_as_ratios(runs):
    run_dir = make_run(runs, "ranged", mix={"low": "4:1", "high": "1:4"})
    snapshot = load_run(run_dir)
    html = write_run_report(run_dir).read_text()
    mixes = {snapshot.mix_label(row) for row in snapshot.rows}
    assert all(re.fullmatch(r"[\d.]+:[\d.]+", mix) and ("1" in mix.split(":")) for mix in mixes)
    assert snapshot.mix_label(snapshot.selection.best_observed) in html


def test_comparison_report_overlays_the_runs_and_names_what_differs(runs):
    first = make_run(runs, "seed0", seed=0)
    second = make_run(runs, "seed1", seed=1)
    write_run_report(first)

    index = write_comparison_report([first, second])

    assert index == runs / "compare-seed0-vs-seed1" / REPORT_DIR / INDEX_HTML
    html = index.read_text()
    assert "search.seed=0" in html and "search.seed=1" in html
    for run_dir in (first, second):
        optimum = load_run(run_dir).selection.best_observed
        assert f"{optimum.lr_fraction:.4g}" in html
    assert 'href="../../seed0/report/index.html"' in html  # the first run's own report, relative
    assert _external_references(html) == []
    assert (index.parent / "front.png").read_bytes().startswith(PNG_MAGIC)


def test_cli_report_prints_where_the_page_is(runs, capsys):
    run_dir = make_run(runs, "cli")
    assert main(["report", str(run_dir)]) == 0
    assert capsys.readouterr().out.strip() == f"report: {run_dir / REPORT_DIR / INDEX_HTML}"


def test_cli_report_on_a_path_that_is_not_a_run_exits_2_and_creates_nothing(tmp_path, capsys):
    empty = tmp_path / "not-a-run"
    empty.mkdir()
    assert main(["report", str(empty)]) == EXIT_INPUT_ERROR
    assert "is not a sweep run directory (no run.json)" in capsys.readouterr().err
    assert list(empty.iterdir()) == []

    RunDir(empty).write_record(RunRecord(study_name="gone", storage=None))
    assert main(["report", str(empty)]) == EXIT_INPUT_ERROR
    assert "optuna.db is missing" in capsys.readouterr().err
    assert [path.name for path in empty.iterdir()] == ["run.json"]  # no empty database made


def test_cli_report_on_a_study_that_is_not_there_exits_2(runs, capsys):
    run_dir = make_run(runs, "renamed")
    RunDir(run_dir).write_record(RunRecord(study_name="other", storage=None))
    assert main(["report", str(run_dir)]) == EXIT_INPUT_ERROR
    assert "it holds no study named 'other'" in capsys.readouterr().err
    shutil.rmtree(run_dir)


@pytest.mark.parametrize(("share", "label"), [(0.2, "4:1"), (0.5, "1:1"), (0.8, "1:4"), (0.6, "1:1.5"), (1 / 3, "2:1")])
def test_ratio_label_writes_mixes_as_design_does(share, label):
    assert ratio_label(share) == label


def _external_references(html: str) -> list[str]:
    """Every src/href/url() target that is neither a data: URI, a fragment nor a relative file path."""
    targets = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)["']|url\(\s*["']?([^"')]*)""", html)
    flat = [a or b for a, b in targets]
    return [t for t in flat if not t.startswith(("data:", "#")) and re.match(r"^[a-zA-Z][\w+.-]*:|^//", t)]
