"""What the full run does with each evaluation: every validation set's loss logged as Megatron-LM logs it, and
domain_gain and forgetting measured against the base's losses at iteration 0, in the proxies' definitions.

train() hands each evaluation's losses (one per set, in data.valid's order) to an Evaluator on rank 0: inside a Ray
job the job's forgetting watch (train_entry/fullrun/job_watch.py, which also logs to W&B and may stop the run), run
on its own (torchrun) EntryEvaluations. Both write Megatron-LM's own lines (megatron_log.validation_line), so one
parser reads this entry's log and a pretrain_gpt.py job's alike. No megatron-core here: the rehearsal's trainer
hands its evaluations to the same Evaluator on images without it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from train_entry.megatron.config import Data
from train_entry.megatron.megatron_log import validation_line
from train_entry.megatron.validation import evaluation_metrics, side_losses
from train_entry.trial_config import BaseLosses, Metrics


class Evaluator(Protocol):
    """What a trainer hands each evaluation to, on rank 0 only."""

    def evaluate(self, step: int, losses: list[float]) -> bool:
        """The validation sets' losses at `step`, in order; True to checkpoint and stop."""
        ...

    def state(self) -> dict[str, Any]:
        """Plain data kept in each checkpoint and handed back to restore() on a resume."""
        ...

    def restore(self, state: dict[str, Any]) -> None: ...


class EntryEvaluations:
    """The entry's own Evaluator: logs each set's loss and what it measures; never stops the run."""

    def __init__(self, data: Data, *, tokens_per_iteration: int, log: Callable[[str], None]) -> None:
        self.sides = [item.side for item in data.valid]
        self.non_english_share = data.non_english_share
        self.tokens_per_iteration = tokens_per_iteration
        self.log = log
        self.base: BaseLosses | None = None
        self.measured: list[Metrics] = []
        """Every evaluation after the base's, in order."""

    def evaluate(self, step: int, losses: list[float]) -> bool:
        for index, loss in enumerate(losses):
            self.log(validation_line(index, step, loss))
        domain, general = side_losses(self.sides, losses, self.non_english_share)
        if self.base is None:
            if step == 0:
                self.base = BaseLosses(domain_loss=domain, general_loss=general)
                self.log(f"base losses: domain {domain:.4f}, general {general:.4f}")
            else:
                self.log(f"iteration {step}: no base losses to measure domain_gain and forgetting against")
            return False
        tokens = step * self.tokens_per_iteration
        metrics = evaluation_metrics(self.base, step=step, tokens_seen=tokens, domain=domain, general=general)
        self.measured.append(metrics)
        self.log(
            f"iteration {step}, {tokens:,} tokens: domain_gain {metrics.domain_gain:.4f}, "
            f"forgetting {metrics.forgetting:.4f}"
        )
        return False

    def state(self) -> dict[str, Any]:
        base = self.base
        return {"base": None if base is None else [base.domain_loss, base.general_loss]}

    def restore(self, state: dict[str, Any]) -> None:
        if state.get("base") is not None:
            domain, general = state["base"]
            self.base = BaseLosses(domain_loss=domain, general_loss=general)
