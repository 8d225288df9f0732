"""`sweep run`'s view in a log (not a terminal): one progress line per finished trial, counting what runs."""

import io

import pytest
from rich.console import Console

from cli.run import LiveView
from sweep.study.record import Status
from sweep.study.row import TrialRow


def row(number: int, status: Status) -> TrialRow:
    done = status is not Status.RUNNING
    return TrialRow(
        number=number, status=status, reason=None, lr_fraction=0.1, peak_lr=3e-4, mix="1:1", domain_share=0.5,
        domain_gain=0.2 if done else None, forgetting=0.01 if done else None, domain_loss=None, general_loss=None,
        best_domain_gain=None, best_step=None, steps=None, stopped_step=None, tokens_seen=None, wall_seconds=1.0,
        attempts=1,
    )  # fmt: skip


@pytest.fixture
def log(monkeypatch) -> io.StringIO:
    out = io.StringIO()
    monkeypatch.setattr("reports.console.make_console", lambda: Console(file=out, width=200))
    return out


def test_a_trials_end_is_written_once_its_replacement_runs_so_two_running_read_two(log):
    view = LiveView(budget=0.02)
    view.start()
    view.update([row(0, Status.RUNNING), row(1, Status.RUNNING)], planned=4, trial_ended=False, at_once=2)
    assert log.getvalue() == ""  # nothing finished yet
    ended = [row(0, Status.COMPLETED), row(1, Status.RUNNING)]  # Ray calls back before it asks for trial 2
    view.update(ended, planned=4, trial_ended=True, at_once=2)
    assert log.getvalue() == ""
    view.update([*ended, row(2, Status.RUNNING)], planned=4, trial_ended=False, at_once=2)  # trial 2 started
    lines = log.getvalue().splitlines()
    assert len(lines) == 1 and "1/4 done" in lines[0] and "2 running" in lines[0]


def test_when_nothing_is_left_to_start_an_end_is_written_at_once(log):
    view = LiveView(budget=0.02)
    view.start()
    rows = [row(0, Status.COMPLETED), row(1, Status.PRUNED), row(2, Status.COMPLETED), row(3, Status.RUNNING)]
    view.update(rows, planned=4, trial_ended=True, at_once=2)  # 3 done, the last one running: nothing more to start
    view.update([*rows[:3], row(3, Status.COMPLETED)], planned=4, trial_ended=True, at_once=2)
    lines = log.getvalue().splitlines()
    assert ["3/4 done" in lines[0] and "1 running" in lines[0], "4/4 done" in lines[1]] == [True, True]
    assert "0 running" in lines[1]
