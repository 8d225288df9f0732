"""The W&B view of sweeps: built from keys the runs really log, rendered by wandb-workspaces, written offline."""

from __future__ import annotations

import glob
import json
import shutil
from pathlib import Path

import pytest
import wandb_workspaces.reports.v2 as wr
import yaml
from wandb_workspaces import expr

from reports.wandb_dashboard import build_dashboard, plan_view, to_workspace
from sweep.files.config_file import SpecError
from sweep.files.rundir import RunDir
from tests.wandb_files import offline_runs


def test_the_workspace_shows_the_trade_off_curves_and_sweeps_side_by_side():
    dashboard = build_dashboard(["a", "b"], project="p", entity=None)
    workspace = to_workspace(dashboard, entity="team")
    assert (workspace.entity, workspace.project) == ("team", "p")
    assert [section.name for section in workspace.sections] == ["Trade-off", "Learning curves", "Across sweeps"]
    trade_off, curves, across = workspace.sections
    parallel, scatter = trade_off.panels
    assert [column.metric for column in parallel.columns] == [
        wr.Config("lr_fraction"),
        wr.Config("domain_share"),
        wr.SummaryMetric("domain_gain"),
        wr.SummaryMetric("forgetting"),
    ]
    assert (scatter.x, scatter.y) == (wr.SummaryMetric("forgetting"), wr.SummaryMetric("domain_gain"))
    assert all(panel.x == "tokens_seen" for panel in curves.panels)
    assert {tuple(panel.y) for panel in curves.panels} >= {("domain_loss",), ("general_loss",)}
    assert all(panel.groupby == "Group" for panel in across.panels)
    assert workspace.settings.x_axis == "tokens_seen"
    # Trial runs of these two sweeps only, grouped by sweep.
    filters = str(workspace.runset_settings.filters)
    assert "proxy" in filters and "'a'" in filters and "'b'" in filters
    assert workspace.runset_settings.groupby == [expr.Metric("Group")]


def _run_dir(root: Path, name: str, tracking: dict | None) -> Path:
    """A run directory as `sweep run` leaves it, as far as the view reads it: run.json and the spec copy."""
    run_dir = root / name
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"study_name": name, "storage": None}))
    (run_dir / "spec.yaml").write_text(yaml.safe_dump({"tracking": tracking} if tracking else {}))
    return run_dir


def test_a_sweep_that_did_not_log_to_wandb_is_refused_before_any_report_is_written(tmp_path, capsys):
    from cli import main

    run_dir = _run_dir(tmp_path, "quiet", None)
    assert main(["report", str(run_dir), "--wandb"]) == 2
    assert "quiet/spec.yaml: tracking.wandb is absent or disabled" in capsys.readouterr().err
    assert sorted(path.name for path in run_dir.iterdir()) == ["run.json", "spec.yaml"]


def test_sweeps_in_different_projects_cannot_share_one_view(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    one = _run_dir(tmp_path, "one", {"wandb": {"project": "p1"}})
    two = _run_dir(tmp_path, "two", {"wandb": {"project": "p2"}})
    with pytest.raises(SpecError, match=r"one W&B view shows one project.*p1.*p2"):
        plan_view([one, two])


@pytest.mark.slow
def test_the_view_reads_only_keys_the_sweeps_runs_log(wandb_sweep):
    trials = offline_runs(wandb_sweep / "trials")
    logged = {
        "config": set.intersection(*(set(run.config) for run in trials)),
        "summary": set.intersection(*(set(run.summary) for run in trials)),
        "history": set.intersection(*(run.history_keys for run in trials)),
    }
    dashboard = build_dashboard(["wandb_sweep"], project="cpt-sweep-tests", entity=None)
    missing = [key for key in dashboard.run_keys() if key.name not in logged[key.source]]
    assert missing == []
    assert {run.group for run in trials} == set(dashboard.sweeps)
    assert {run.job_type for run in trials} == {dashboard.job_type}


@pytest.mark.slow
def test_offline_the_definition_is_written_with_commands_that_sync_every_run(
    wandb_sweep, tmp_path, monkeypatch, capsys
):
    from cli import main

    run_dir = tmp_path / "runs" / "wandb_sweep"
    shutil.copytree(wandb_sweep, run_dir)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WANDB_MODE", "offline")
    assert main(["report", "runs/wandb_sweep", "--wandb"]) == 0
    out = capsys.readouterr().out
    written = json.loads(RunDir(run_dir).wandb_dashboard.read_text())
    assert written["url"] is None and written["dashboard"]["sweeps"] == ["wandb_sweep"]
    assert written["dashboard"]["project"] == "cpt-sweep-tests"
    sync = next(line.split()[2:] for line in out.splitlines() if line.strip().startswith("wandb sync"))
    synced = sorted(Path(path) for pattern in sync for path in glob.glob(pattern))
    assert synced == sorted(run.path for run in offline_runs(Path("runs")))  # relative, as printed
    assert len(synced) == 5  # four trials and the sweep-level run
    assert "sweep report runs/wandb_sweep --wandb" in out
