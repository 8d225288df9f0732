"""A full run's log read as evidence: each validation loss bounded and each set's iterations going forward.

`sweep promote watch` measures a job's forgetting from its log's validation lines: a Megatron-LM stdout log a team
gives (--log), a rehearsal's job.log or a cluster's Jobs API log. A log is input like any file, and one number in it
becomes a verdict on a 340 k GPU-hour run, so every loss a line reports must be one a mean token loss can be (finite,
within [MIN_LOSS, MAX_LOSS] nats: a loss of 0 or -2 read as "within the bound", 1e-300 as a base made every ratio
huge), and the lines of each set must go forward in iterations up to the run's last: an iteration logged again with
other losses, or going backwards, is two runs' lines in one log. Each refusal names the log and the line.
"""

from __future__ import annotations

import math

from sweep.promote.errors import PromotionError
from train_entry.megatron.megatron_log import ValidationLoss
from train_entry.trial_config import MAX_LOSS, MIN_LOSS


class LogRefused(PromotionError):
    """A validation line that cannot be evidence of the run's forgetting; the message names where it is and why."""


class LogEvidence:
    """The validation lines of one run's log(s), in the order read: admits each loss once, refuses what no run logs."""

    def __init__(self, *, last_iteration: int) -> None:
        self.last_iteration = last_iteration
        """The run's last iteration (its train_iters, or a job's steps): a later one is another run's."""
        self._seen: dict[int, dict[int, tuple[float, str]]] = {}
        """By set index: each iteration read, with its loss and where it was read."""

    def admit(self, where: str, found: ValidationLoss) -> bool:
        """True when `found` (read at `where`, a log and its line) is new evidence; False when it repeats an iteration
        of its set with the same loss (overlapping logs, a log given twice); LogRefused otherwise."""
        loss, iteration, index = found.loss, found.iteration, found.set_index
        what = f"validation set {index}'s loss at iteration {iteration:.6g}"
        if not math.isfinite(loss):
            raise LogRefused(
                f"{where}: {what} is {loss}: not a finite loss (the run diverged there, or the line is damaged); the "
                "watch measures forgetting from finite losses only"
            )
        if not MIN_LOSS <= loss <= MAX_LOSS:
            raise LogRefused(
                f"{where}: {what} is {loss:.6g}, outside [{MIN_LOSS:g}, {MAX_LOSS:g}] nats per token, where a mean "
                "token loss on held-out text lies (a unit error or a damaged line)"
            )
        if iteration > self.last_iteration:
            raise LogRefused(
                f"{where}: iteration {iteration:.6g} is past the run's last iteration {self.last_iteration:,}: not a "
                "log of this run"
            )
        seen = self._seen.setdefault(index, {})
        if iteration in seen:
            first, at = seen[iteration]
            if loss != first:
                raise LogRefused(
                    f"{where}: iteration {iteration} of validation set {index} is logged twice with different losses "
                    f"({first:.6g} at {at}, {loss:.6g} here): two runs' lines in one log"
                )
            return False
        latest = max(seen, default=None)
        if latest is not None and iteration < latest:
            raise LogRefused(
                f"{where}: iteration {iteration} of validation set {index} after iteration {latest} (at "
                f"{seen[latest][1]}): a run's evaluations go forward in iterations; give its logs in the order they ran"
            )
        seen[iteration] = (loss, where)
        return True
