"""A trial's row: the value the trials table, best.json, the choice and the report all read.

A leaf: it imports none of its users, so the choice, the ladder and the reports can name it without
importing the study, pandas or the run directory.
"""

from __future__ import annotations

import enum

from pydantic import ConfigDict

from sweep.study.record import Status
from train_entry.config import StrictConfig


class Role(str, enum.Enum):
    """Why a trial ran: the search, a replicate of a searched point at another seed, or the pick's confirmation."""

    SEARCH = "search"
    REPLICATE = "replicate"
    CONFIRMATION = "confirmation"


class TrialRow(StrictConfig):
    """One trial as the table, best.json and the report show it."""

    # Measurements: a diverged trial's last loss may be non-finite, and the row shows it as it is.
    model_config = ConfigDict(allow_inf_nan=True)

    number: int
    """Optuna's trial number: the trial's id across the study, the table and optuna-dashboard."""
    status: Status
    reason: str | None
    lr_fraction: float
    peak_lr: float
    mix: str
    """general:domain"""
    domain_share: float
    domain_gain: float | None
    """Final (last evaluation): what the optimum is chosen on."""
    forgetting: float | None
    domain_loss: float | None
    general_loss: float | None
    best_domain_gain: float | None
    """Highest domain_gain over the trial's evaluations, and the step it was measured at."""
    best_step: int | None
    steps: int | None
    """Optimizer steps taken."""
    stopped_step: int | None
    """Step at which a pruned or diverged trial stopped; None when it ran the whole budget."""
    tokens_seen: int | None
    wall_seconds: float | None
    attempts: int
    seed: int | None = None
    """The seed its training used: proxy.seed, or a replicate's own (None only in rows made by hand)."""
    replicate_of: int | None = None
    """The trial whose point this replicate re-runs with another seed; None for a main trial."""
    confirms: int | None = None
    """For a confirmation trial, its round: the pick run again at a fresh seed (0: the first point confirmed)."""
    forecast_forgetting: float | None = None
    """For a stopped trial, the forgetting its last evaluation's forecast (sweep.study.forecast) predicted it would
    end at: what pruning judged it by, and the bound it enters the surrogate with. None when it ran to the end."""
    gain_text_error: float | None = None
    """Standard error of the final domain_gain over the validation sequences: how much another draw of validation
    text would move it (train_entry.trial_config.TextError); None when not measured per sequence."""
    forgetting_text_error: float | None = None

    @property
    def valid_draw(self) -> int:
        """The validation draw it was measured on: 0 for the search and its replicates, 1 + r for confirmation round r
        (train_entry.trial_config.TrialConfig.valid_draw)."""
        return 0 if self.confirms is None else 1 + self.confirms

    @property
    def role(self) -> Role:
        if self.confirms is not None:
            return Role.CONFIRMATION
        return Role.REPLICATE if self.replicate_of is not None else Role.SEARCH

    @property
    def finished(self) -> bool:
        return self.status not in (Status.WAITING, Status.RUNNING)
