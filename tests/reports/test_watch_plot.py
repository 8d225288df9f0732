"""The report's watch plot: a watched job's forgetting beside the proxies and the plan's prediction on one set of
axes, drawn from the watch.json `sweep promote watch` kept; a corrupt one is exit 2 naming it."""

from __future__ import annotations

import pytest
from tests.sweep.promote.launch.test_watch_report import rehearsed

from cli import main
from reports.report import write_run_report
from reports.snapshot import load_run
from reports.watch_plot import watch_figure
from sweep.promote.launch.watch_report import latest_record
from sweep.study.record import Status
from tests.reports.test_report import PNG_MAGIC, make_run


@pytest.fixture
def watched(tmp_path):
    run_dir = make_run(tmp_path / "runs", "lr_mix")
    rehearsed(run_dir, {0: (2.0, 3.0), 10: (2.01, 2.7), 20: (2.2, 2.6), 30: (2.2, 2.5)})
    assert main(["promote", "watch", str(run_dir)]) == 0
    return run_dir


def test_the_plot_draws_the_records_numbers_beside_the_proxies_and_the_prediction(watched):
    path, record = latest_record(watched)
    assert path.name == "watch.json" and path.parent.name == record.job_id
    # As the job's log said: general 2.0 -> 2.01, 2.2, 2.2 over the rehearsal's 40 steps.
    assert [round(row.forgetting, 4) for row in record.evaluations] == [0.005, 0.1, 0.1]
    snapshot = load_run(watched)
    lines = {line.get_label(): line for line in watch_figure(snapshot, record).axes[0].get_lines()}
    job = lines[f"job {record.job_id}"]
    assert list(job.get_xdata()) == [0.0, 0.25, 0.5, 0.75]  # iterations 10, 20, 30 of the rehearsal's 40
    assert list(job.get_ydata()) == [0.0, *(row.forgetting for row in record.evaluations)]
    over = lines["over the predicted upper bound"]
    assert list(over.get_xdata()) == [0.5, 0.75]
    predicted = lines["predicted"]
    points = record.watch.prediction.points
    assert list(predicted.get_xdata()) == [p.tokens / record.run_tokens for p in points]
    assert list(predicted.get_ydata()) == [p.forgetting for p in points]
    completed = [row for row in snapshot.rows if row.status is Status.COMPLETED and snapshot.histories.get(row.number)]
    proxies = [line for line in watch_figure(snapshot, record).axes[0].get_lines() if line.get_gid() == "proxy"]
    assert len(proxies) == len(completed) == 5
    final = sorted(line.get_ydata()[-1] for line in proxies)
    assert final == pytest.approx(sorted(snapshot.histories[row.number][-1].forgetting for row in completed))


def test_the_report_has_the_plot_with_a_caption_from_the_record(watched):
    index = write_run_report(watched)
    assert (index.parent / "watch.png").read_bytes().startswith(PNG_MAGIC)
    page = index.read_text()
    assert "<h2>The full run</h2>" in page
    assert "forgetting at its 3 evaluation(s) after the base&#39;s (black; red X: the 2 over" in page


def test_a_corrupt_watch_record_is_exit_2_naming_it(watched, capsys):
    path, _ = latest_record(watched)
    path.write_text('{"format_version": 1, "written_by": "cpt-sweep", "job_id": 3}')
    assert main(["report", str(watched)]) == 2
    assert str(path) in capsys.readouterr().err
