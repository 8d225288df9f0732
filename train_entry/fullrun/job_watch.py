"""The forgetting watch inside the job, on rank 0: it reads each evaluation's log lines as they are logged, says what
it measured against the prediction, logs it to the run's W&B run, and alerts there when the watch trips.

W&B: one run per job (its submission id is the run's id and name, so a worker group restarted by Ray Train resumes the
same run), in the sweep's project and group with job type `full-run` and the plan as its config, from rank 0 only.
Online or offline as the job's `wandb` says; wandb.alert is sent online (W&B mails or posts it to Slack as the user's
settings say) and recorded in the run's files offline. The stop itself is the trainer's: it checkpoints and ends, and
the job's driver ends with the reason (train_entry/fullrun/job.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from train_entry.fullrun.config import JobWandb
from train_entry.fullrun.evaluations import Evaluations, WatchConfig
from train_entry.fullrun.watch import WatchedEvaluation
from train_entry.megatron.megatron_log import validation_line
from train_entry.trial_config import BaseLosses

FULL_RUN_JOB = "full-run"
"""The W&B job type of a full run, beside the trials' `proxy`."""
ALERT_TITLE = "forgetting over the prediction"


class JobWatch:
    def __init__(
        self, config: WatchConfig, wandb: JobWandb | None, *, name: str, directory: Path, log: Callable[[str], None]
    ) -> None:
        self.config, self.log = config, log
        self.evaluations = Evaluations(config)
        self.stop_reason: str | None = None
        self._run = _start_run(wandb, name=name, directory=directory) if wandb is not None else None

    def evaluate(self, step: int, losses: list[float]) -> bool:
        """Logs the sets' losses at `step` as Megatron-LM does, and reads them back as the watch reads any job's log."""
        lines = [validation_line(index, step, loss) for index, loss in enumerate(losses)]
        for line in lines:
            self.log(line)
        return self.read(lines)

    def read(self, lines: list[str]) -> bool:
        """Reads one evaluation's log lines; True when the job should checkpoint and stop."""
        for line in lines:
            found = self.evaluations.read(line)
            if isinstance(found, BaseLosses):
                self.log(f"watch base losses: domain {found.domain_loss:.4f}, general {found.general_loss:.4f}")
            elif found is not None:
                self._report(found)
        return self.stop_reason is not None

    def _report(self, evaluation: WatchedEvaluation) -> None:
        self.log(f"watch {evaluation.line()}")
        if self._run is not None:
            self._run.log(_wandb_row(evaluation), step=evaluation.metrics.step)
        if not evaluation.tripped:
            return
        if self._run is not None:
            import wandb

            self._run.alert(title=ALERT_TITLE, text=evaluation.line(), level=wandb.AlertLevel.WARN)
        if self.config.stop_on_forgetting and self.stop_reason is None:
            self.stop_reason = f"stopped by the forgetting watch (--stop-on-forgetting): {evaluation.line()}"

    def state(self) -> dict[str, Any]:
        """What a restarted worker group needs to go on watching: the base's losses and the overshoots in a row."""
        base = self.evaluations.base
        overshoots = self.evaluations.watched[-1].overshoots if self.evaluations.watched else 0
        return {"base": None if base is None else [base.domain_loss, base.general_loss], "overshoots": overshoots}

    def restore(self, state: dict[str, Any]) -> None:
        if state.get("base") is not None:
            domain, general = state["base"]
            self.evaluations.restore(BaseLosses(domain_loss=domain, general_loss=general), int(state["overshoots"]))

    def close(self, exit_code: int = 0) -> None:
        if self._run is not None:
            self._run.finish(exit_code=exit_code)
            self._run = None


def _start_run(wandb_config: JobWandb, *, name: str, directory: Path) -> Any:
    import wandb

    directory.mkdir(parents=True, exist_ok=True)
    return wandb.init(
        project=wandb_config.project,
        entity=wandb_config.entity,
        group=wandb_config.group,
        job_type=FULL_RUN_JOB,
        name=name,
        id=name,
        resume="allow",
        config=wandb_config.config,
        dir=str(directory),
        mode=wandb_config.mode,
        # The job's log holds the watch's lines; W&B's own console capture would copy every worker line.
        settings=wandb.Settings(silent=True, console="off"),
    )


def _wandb_row(evaluation: WatchedEvaluation) -> dict[str, float]:
    metrics = evaluation.metrics
    row = {
        "tokens_seen": float(metrics.tokens_seen),
        "domain_loss": metrics.domain_loss,
        "general_loss": metrics.general_loss,
        "domain_gain": metrics.domain_gain,
        "forgetting": metrics.forgetting,
        "forgetting_overshoots": float(evaluation.overshoots),
    }
    if evaluation.upper is not None:
        row["forgetting_predicted_upper"] = evaluation.upper
    return row
