"""The sweep-level W&B run: at the end of `sweep run`, the trials table and the Pareto front as W&B
tables and best.json's selection in the run's summary."""

from __future__ import annotations

from pathlib import Path

from sweep.choice.best import BestSummary
from sweep.run.tracking import RUN_ID_UNSAFE, SWEEP_JOB, WandbTarget, start_wandb_run
from sweep.study.row import TrialRow
from sweep.study.study import SweepPlan


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
    columns = list(TrialRow.model_fields)

    def table(rows: list[TrialRow]) -> wandb.Table:
        return wandb.Table(columns=columns, data=[list(row.model_dump(mode="json").values()) for row in rows])

    try:
        run.log({"trials": table(rows), "pareto_front": table(summary.pareto_front)})
        run.summary.update(summary.model_dump(mode="json", exclude={"pareto_front"}))
    finally:
        run.finish()
