"""The ladder's report: a pure reader of ladder.json, with the pick against N and its band to the target, and
the largest rung predicted against measured, in the page and in markdown."""

from __future__ import annotations

from cli import main
from reports.ladder_report import write_ladder_report
from reports.report import REPORT_MD
from sweep.files.rundir import RunDir
from sweep.ladder.driver import run_ladder
from sweep.spec.spec import load_spec
from tests.sweep.ladder.test_ladder import LADDER, Quiet, ScriptedRungs


def test_the_ladder_report_plots_the_pick_against_size_and_tables_predicted_against_measured(write_tiny_spec, tmp_path):
    spec = load_spec(write_tiny_spec("ladder.yaml", ladder=LADDER))
    run = RunDir(tmp_path / "runs" / "ladder")
    run_ladder(spec, run, fresh=False, view=Quiet(), run_rung=ScriptedRungs(run))

    index = write_ladder_report(run.path)
    html = index.read_text()
    assert (index.parent / "optimum_vs_size.png").read_bytes().startswith(b"\x89PNG")
    assert "Predicted against measured: m" in html and "llama3.1-70b" in html
    markdown = (index.parent / REPORT_MD).read_text()
    assert "| lr_fraction |" in markdown and "predicted (90 % interval)" in markdown
    assert "(no interval: 0 degrees of freedom)" in markdown  # two smaller rungs predict the largest
    assert "1 degree(s) of freedom" in markdown  # three rungs extrapolate to the target
    assert main(["report", str(run.path)]) == 0  # `sweep report` of a ladder directory writes the same
