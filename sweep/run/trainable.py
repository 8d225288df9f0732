"""The Ray Tune function trainable: one proxy trial, reporting to Ray Tune, its Optuna trial and W&B.

It runs in a Ray worker process: it opens the study from its storage URL, reads its point from
its Optuna trial and hands the trial a report callback: `run_trial` in this process, or, for a trial
of several workers (execution.gpus above 1, or execution.workers), a Ray Train job that this process
drives (sweep.run.sharded_job). The proxy trial itself knows nothing of Ray or Optuna.
"""

from __future__ import annotations

import shutil

from ray import tune

from sweep.choice.feasible import is_feasible
from sweep.files.rundir import RunDir
from sweep.run.prepare import Prepared
from sweep.run.tracking import (
    FINAL_KEYS,
    TrialRun,
    WandbTarget,
    downstream_figures,
    trial_run_name,
    wandb_trial_config,
)
from sweep.study.record import Attr, Status
from sweep.study.study import load_study
from sweep.study.table import trial_row
from sweep.study.trial import NUMBER, Report, run_study_trial
from train_entry.trial_config import Metrics, TrialResult


def proxy_trainable(
    config: dict, *, prepared: Prepared, wandb: WandbTarget | None, url: str, study_name: str, run: RunDir
) -> None:
    sweep = load_study(url=url, name=study_name)
    execution = prepared.spec.execution
    number = config[NUMBER]
    frozen = sweep.frozen(number)
    point = sweep.plan.space.point(frozen.params)
    output_dir = run.inside(run.trial(number))
    row = trial_row(frozen, sweep.plan)
    trial_config = prepared.trial_config(
        # A replicate trains with its own seed, also when a rerun takes it up after a crash; a confirmation trial is
        # measured on its round's own draw of validation text.
        lr_fraction=point.lr_fraction,
        mix=point.mix,
        output_dir=output_dir,
        seed=frozen.user_attrs.get(Attr.SEED.value),
        valid_draw=row.valid_draw,
    )
    config_logged = wandb_trial_config(
        trial_config, base_model=prepared.spec.base.model, sweep=study_name, number=number, role=row.role.value
    )
    tracked = TrialRun(
        wandb, name=trial_run_name(study_name, number), group=study_name, config=config_logged, directory=output_dir
    )

    def run(report: Report) -> TrialResult:
        # Imported here, in the trial's process: the driver, which imports this module to hand Tune the function,
        # never loads torch, transformers or megatron-core (seconds of CPU at every `sweep run`).
        from sweep.run.sharded_job import clear_for_retry, run_sharded_job
        from train_entry.proxy import run_trial

        # Inside run_study_trial, so that a failure here too is stored with the trial and retried.
        # Every attempt starts from an empty directory: one killed mid-write (a crash, a retry)
        # may have left half an index cache behind. A sharded trial's checkpoint stays: it resumes from it.
        if execution.sharded:
            clear_for_retry(output_dir)
        else:
            shutil.rmtree(output_dir, ignore_errors=True)
        tracked.start()

        def logged(metrics: Metrics) -> bool:
            tracked.log(metrics)
            return report(metrics)

        if execution.sharded:
            return run_sharded_job(trial_config, logged, execution.job_workers(max_retries=execution.max_retries))
        return run_trial(trial_config, logged)

    with tracked:
        run_study_trial(sweep, number, run, base=trial_config.base_losses, on_report=_to_tune)
        # The status the study recorded (a pruned trial ends PRUNED, with the pruner's reason).
        row = trial_row(sweep.frozen(number), sweep.plan)
        within = is_feasible(row.forgetting, sweep.plan.forgetting_budget) if row.status is Status.COMPLETED else None
        figures = {key: getattr(row, key) for key in FINAL_KEYS} | downstream_figures(row)
        tracked.end(status=row.status.value, reason=row.reason, within_budget=within, figures=figures)
    # Ray's last result of the trial says how it ended. A trial that diverged before its first evaluation
    # reported nothing, and Tune's console reporter prints "Trial ... completed. Last result: " for it.
    tune.report({"status": row.status.value})


def _to_tune(metrics: Metrics) -> None:
    tune.report(metrics.model_dump())
