"""The ladder's report: a pure reader of ladder.json, with the matched ratios of every rung beside the target's, the
law with its fit per loss and per rung, its answer at the target and leave-one-rung-out against the ladder's targets,
in the page and in markdown."""

from __future__ import annotations

from cli import main
from reports.ladder_report import write_ladder_report
from reports.report import REPORT_MD
from sweep.files.rundir import RunDir
from sweep.ladder.record import read_ladder
from sweep.law.lines import carried_lines, discrepancy_lines


def test_the_ladder_report_tables_the_matched_rungs_the_law_and_its_folds(scripted_ladder_run, tmp_path):
    index = write_ladder_report(scripted_ladder_run, tmp_path / "report")
    html = index.read_text()
    for figure in ("law_fit.png", "critical_share.png"):
        assert (index.parent / figure).read_bytes().startswith(b"\x89PNG")
    assert "Matched rungs" in html and "llama3.1-70b (target)" in html and "Leave-one-rung-out" in html
    markdown = (index.parent / REPORT_MD).read_text()
    assert "| pretraining tokens / N | CPT tokens / N | CPT / pretraining tokens | steps | warmup share |" in markdown
    assert "| xxs | 46,272 | 0.006001 | 1 |" in markdown and "(>2x)" in markdown
    assert "forgetting = (N / " in markdown and "R2 " in markdown and "| m | 27 |" in markdown
    assert (
        "Evaluations the law sees: xxs 27 evaluations of 9 trials (base general / domain loss 3.200 / 3.900)"
        in markdown
    )
    assert "Targets per fold: lr_fraction within x1.3, domain share within ±0.07" in markdown
    assert "published: grows" in markdown
    fit = read_ladder(RunDir(scripted_ladder_run)).fit  # the form's error and each interval's sources, as recorded
    said = carried_lines(fit.prediction, fit.laws.discrepancy)
    assert said and "what makes each interval" in said[-1]
    for line in discrepancy_lines(fit.laws.discrepancy) + said:
        assert line in markdown
    assert main(["report", str(scripted_ladder_run), "--output", str(tmp_path / "again")]) == 0
