"""`sweep report RUN... --wandb`: a saved W&B workspace view of one or more sweeps.

The view is first built as plain data (`Dashboard`: sections of panels over named config,
summary and history keys, all taken from `sweep.run.tracking`, which logs them), then rendered with
W&B's own `wandb-workspaces` library and saved online. Offline, or without an API key, the
definition is written into the run directory with the commands that publish it after
`wandb sync`. Saving online needs the W&B server, which this project's CI cannot reach: that
step is the library's `Workspace.save()` and is not exercised by the tests.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from sweep.files.compat import DASHBOARD
from sweep.files.config_file import SpecError
from sweep.files.records import write_whole
from sweep.files.rundir import RunDir
from sweep.run.tracking import STEP_METRIC, TRIAL_JOB, TrackingConfig, WandbTarget, resolve_wandb
from sweep.spec.spec import spec_copy_content

if TYPE_CHECKING:
    import wandb_workspaces.workspaces as ws


@dataclass(frozen=True)
class Key:
    """A value a W&B run carries: a config entry, a summary value, or a logged (history) metric."""

    source: Literal["config", "summary", "history"]
    name: str


@dataclass(frozen=True)
class Panel:
    kind: Literal["parallel_coordinates", "scatter", "line", "bar"]
    title: str
    y: tuple[Key, ...]
    """The axes of a parallel-coordinates plot, in order; the plotted values otherwise."""
    x: Key | None = None
    by_sweep: bool = False
    """One aggregated series per sweep (the runs' W&B group) instead of one per trial."""


@dataclass(frozen=True)
class Section:
    name: str
    panels: tuple[Panel, ...]


@dataclass(frozen=True)
class Dashboard:
    name: str
    project: str
    entity: str | None
    """None: the API key's default entity, looked up when the view is saved."""
    sweeps: tuple[str, ...]
    """The W&B groups (sweep names) the view shows."""
    job_type: str
    sections: tuple[Section, ...]

    def run_keys(self) -> set[Key]:
        """Every run key a panel reads: each must be one the sweep's runs log."""
        return {
            key
            for section in self.sections
            for panel in section.panels
            for key in (*panel.y, *([panel.x] if panel.x else []))
        }

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _config(name: str) -> Key:
    return Key("config", name)


def _summary(name: str) -> Key:
    return Key("summary", name)


def _curve(name: str, *, by_sweep: bool = False) -> Panel:
    return Panel(
        kind="line",
        title=f"{name} vs tokens" + (" by sweep" if by_sweep else ""),
        x=Key("history", STEP_METRIC),
        y=(Key("history", name),),
        by_sweep=by_sweep,
    )


def build_dashboard(sweeps: list[str], *, project: str, entity: str | None) -> Dashboard:
    gain, forgetting = _summary("domain_gain"), _summary("forgetting")
    trade_off = Section(
        "Trade-off",
        (
            Panel(
                kind="parallel_coordinates",
                title="lr_fraction, domain_share -> domain_gain, forgetting",
                y=(_config("lr_fraction"), _config("domain_share"), gain, forgetting),
            ),
            Panel(kind="scatter", title="domain_gain vs forgetting", x=forgetting, y=(gain,)),
        ),
    )
    curves = Section(
        "Learning curves",
        tuple(_curve(name) for name in ("domain_loss", "general_loss", "domain_gain", "forgetting")),
    )
    across = Section(
        "Across sweeps",
        (
            Panel(kind="bar", title="best domain_gain by sweep", y=(gain,), by_sweep=True),
            Panel(kind="bar", title="least forgetting by sweep", y=(forgetting,), by_sweep=True),
            _curve("domain_loss", by_sweep=True),
            _curve("general_loss", by_sweep=True),
        ),
    )
    return Dashboard(
        name=f"cpt-sweep: {', '.join(sweeps)}",
        project=project,
        entity=entity,
        sweeps=tuple(sweeps),
        job_type=TRIAL_JOB,
        sections=(trade_off, curves, across),
    )


def to_workspace(dashboard: Dashboard, *, entity: str) -> ws.Workspace:
    """The dashboard as a `wandb-workspaces` Workspace (built offline; saving it needs the server)."""
    import wandb_workspaces.reports.v2 as wr
    import wandb_workspaces.workspaces as ws
    from wandb_workspaces import expr

    def metric(key: Key) -> Any:
        if key.source == "config":
            return wr.Config(key.name)
        if key.source == "summary":
            return wr.SummaryMetric(key.name)
        return key.name  # a history metric is named as logged

    def panel(spec: Panel) -> Any:
        group = {"groupby": "Group"} if spec.by_sweep else {}
        if spec.kind == "parallel_coordinates":
            return wr.ParallelCoordinatesPlot(
                title=spec.title, columns=[wr.ParallelCoordinatesPlotColumn(metric=metric(key)) for key in spec.y]
            )
        if spec.kind == "scatter":
            return wr.ScatterPlot(title=spec.title, x=metric(spec.x), y=metric(spec.y[0]))
        if spec.kind == "bar":
            # Best gain and least forgetting are what a sweep is compared on.
            best = "max" if spec.y[0].name == "domain_gain" else "min"
            return wr.BarPlot(title=spec.title, metrics=[metric(key) for key in spec.y], groupby_aggfunc=best, **group)
        aggregate = {"groupby_aggfunc": "mean", "groupby_rangefunc": "minmax"} if spec.by_sweep else {}
        return wr.LinePlot(title=spec.title, x=metric(spec.x), y=[metric(key) for key in spec.y], **group, **aggregate)

    return ws.Workspace(
        name=dashboard.name,
        entity=entity,
        project=dashboard.project,
        sections=[
            ws.Section(name=section.name, panels=[panel(p) for p in section.panels], is_open=True)
            for section in dashboard.sections
        ],
        settings=ws.WorkspaceSettings(x_axis=STEP_METRIC),
        runset_settings=ws.RunsetSettings(
            filters=expr.And(
                expr.Metric("JobType") == dashboard.job_type, expr.Metric("Group").isin(list(dashboard.sweeps))
            ),
            groupby=[expr.Metric("Group")],
        ),
    )


def wandb_target(run_dir: Path) -> WandbTarget:
    """The W&B project and mode of a finished sweep, from the spec copy in its run directory."""
    path = RunDir(run_dir).spec_copy
    try:
        tracking = TrackingConfig.model_validate(spec_copy_content(path).get("tracking") or {})
    except (ValidationError, AttributeError) as exc:
        raise SpecError(f"{path}: cannot read its tracking section: {exc}") from None
    target, _ = resolve_wandb(tracking.wandb)
    if target is None:
        raise SpecError(
            f"{path}: tracking.wandb is absent or disabled (or WANDB_MODE=disabled), so this sweep logged "
            "nothing to W&B; set tracking.wandb in the spec and run the sweep again"
        )
    return target


@dataclass(frozen=True)
class View:
    """A dashboard ready to publish: checked against the sweeps' specs before anything is written."""

    dashboard: Dashboard
    run_dirs: tuple[Path, ...]
    online: bool
    """Every sweep's W&B mode resolves to online now (an API key is configured, WANDB_MODE allows it)."""

    @property
    def record_path(self) -> Path:
        run = RunDir(self.run_dirs[0])
        return run.inside(run.wandb_dashboard)


def plan_view(run_dirs: list[Path]) -> View:
    """The view of these sweeps; raises SpecError when one did not log to W&B or they log to different projects."""
    targets = {run_dir: wandb_target(run_dir) for run_dir in run_dirs}
    projects = {(target.entity, target.project) for target in targets.values()}
    if len(projects) > 1:
        shown = ", ".join(f"{run_dir}: {t.entity or '(default)'}/{t.project}" for run_dir, t in targets.items())
        raise SpecError(f"one W&B view shows one project; these sweeps log to different ones ({shown})")
    target = targets[run_dirs[0]]
    sweeps = [RunDir(run_dir).read_record().study_name for run_dir in run_dirs]
    return View(
        dashboard=build_dashboard(sweeps, project=target.project, entity=target.entity),
        run_dirs=tuple(run_dirs),
        online=all(t.mode == "online" for t in targets.values()),
    )


def publish(view: View) -> list[str]:
    """Saves the view online, or writes its definition for later; returns the lines to print."""
    path = view.record_path
    url = _recorded_url(path)
    if view.online:
        url = _save_online(view.dashboard, url=url)
        _write(path, view.dashboard, url=url)
        return [f"W&B view saved: {url} (recorded in {path})"]
    _write(path, view.dashboard, url=url)
    offline_runs = " ".join(
        f"{run_dir}/trials/*/wandb/offline-run-* {run_dir}/wandb/offline-run-*" for run_dir in view.run_dirs
    )
    runs = " ".join(str(run_dir) for run_dir in view.run_dirs)
    return [
        f"W&B is offline: the view's definition is in {path}. To publish it:",
        f"  wandb sync {offline_runs}",
        f"  WANDB_MODE=online sweep report {runs} --wandb    (with WANDB_API_KEY set or after `wandb login`)",
    ]


def _recorded_url(path: Path) -> str | None:
    """The URL of the view saved before from this run directory, so that saving again updates it."""
    try:
        url = DASHBOARD.unstamped(path, json.loads(path.read_text(encoding="utf-8"))).get("url")
    except (OSError, ValueError):  # FormatError among them
        return None  # none saved yet (or an unreadable record, or another version's: a new view is saved)
    return url if isinstance(url, str) else None


def _save_online(dashboard: Dashboard, *, url: str | None) -> str:
    """Updates the view saved before (its URL recorded in the run directory), or saves a new one."""
    import wandb
    import wandb_workspaces.workspaces as ws

    entity = dashboard.entity or wandb.Api().default_entity
    workspace = to_workspace(dashboard, entity=entity)
    if url is not None:
        saved = ws.Workspace.from_url(url)
        saved.name, saved.sections = workspace.name, workspace.sections
        saved.settings, saved.runset_settings = workspace.settings, workspace.runset_settings
        workspace = saved
    return workspace.save().url


def _write(path: Path, dashboard: Dashboard, *, url: str | None) -> None:
    write_whole(path, DASHBOARD.dumps_data({"url": url, "dashboard": dashboard.to_json()}))
