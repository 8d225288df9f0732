"""The sweep-level W&B run: at the end of `sweep run`, the trials table (each trial's role, the pick's marked) and the
Pareto front as W&B tables, best.json (headed by its verdict, the pick) in the run's summary, and the pick's trial
runs tagged."""

from __future__ import annotations

import logging
from pathlib import Path

from sweep.choice.best import BestSummary
from sweep.run.tracking import PICK_TAG, RUN_ID_UNSAFE, SWEEP_JOB, WandbTarget, start_wandb_run, trial_run_name
from sweep.study.row import TrialRow
from sweep.study.study import SweepPlan

_log = logging.getLogger(__name__)
TAG_TIMEOUT_S = 20
"""Per request to W&B's public API when tagging the pick's runs: a slow server delays the end of a sweep this much at
most per request, and never fails it."""


def log_sweep(
    target: WandbTarget | None,
    *,
    name: str,
    sweep_id: str,
    run_dir: Path,
    rows: list[TrialRow],
    summary: BestSummary,
    plan: SweepPlan,
) -> None:
    """The sweep-level run: the trials table and the Pareto front as W&B tables,
    best.json (the best observed trial, the pick) in its summary.

    `summary` is best.json's content, so W&B shows the selection the sweep made, not a recomputation.
    Its run id comes from the study (`sweep_id`): running a finished sweep again resumes that run
    and updates it, rather than adding a second sweep run to the group.
    """
    if target is None:
        return
    import wandb

    config = {"sweep": name, **plan.model_dump(mode="json")}
    run = start_wandb_run(
        target,
        name=f"{name}-sweep",
        group=name,
        job_type=SWEEP_JOB,
        config=config,
        directory=run_dir,
        run_id=f"{RUN_ID_UNSAFE.sub('-', name)[:48]}-{sweep_id}",
    )
    columns = [*TrialRow.model_fields, "role", "pick"]

    def table(rows: list[TrialRow]) -> wandb.Table:
        data = [
            [*row.model_dump(mode="json").values(), row.role.value, row.number in summary.pick_trials] for row in rows
        ]
        return wandb.Table(columns=columns, data=data)

    pick_runs = [trial_run_name(name, number) for number in summary.pick_trials]
    online = not run.offline  # an online run that could not reach W&B fell back to offline (start_wandb_run)
    try:
        run.log({"trials": table(rows), "pareto_front": table(summary.pareto_front)})
        run.summary.update({**summary.model_dump(mode="json", exclude={"pareto_front"}), "pick_runs": pick_runs})
    finally:
        run.finish()
    if online and pick_runs:
        tag_pick_runs(target, group=name, names=pick_runs)


def tag_pick_runs(target: WandbTarget, *, group: str, names: list[str]) -> None:
    """Tags the pick's trial runs `pick` through W&B's public API, once the sweep has decided which they are.

    Online only: a finished offline run cannot be edited, so offline the sweep run's summary (`pick_runs`) is where
    they are named. A W&B that cannot be reached leaves the tags off with a warning; it never fails the sweep."""
    import wandb

    try:
        api = wandb.Api(timeout=TAG_TIMEOUT_S)
        path = f"{target.entity or api.default_entity}/{target.project}"
        for found in api.runs(path, filters={"group": group, "display_name": {"$in": names}}):
            if PICK_TAG not in found.tags:
                found.tags = [*found.tags, PICK_TAG]
                found.update()
    except (wandb.errors.CommError, wandb.errors.AuthenticationError, ValueError) as exc:
        _log.warning("W&B: the pick's runs %s were not tagged %r (%s)", ", ".join(names), PICK_TAG, exc)
