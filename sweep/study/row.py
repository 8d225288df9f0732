"""A trial's row: the value the trials table, best.json, the choice and the report all read.

A leaf: it imports none of its users, so the choice, the ladder and the reports can name it without
importing the study, pandas or the run directory.
"""

from __future__ import annotations

import enum

from pydantic import ConfigDict

from sweep.study.record import Status
from train_entry.config import StrictConfig
from train_entry.data.draws import text_name
from train_entry.downstream.scores import TaskDrop

POOL = text_name(0)
"""The text every search trial and replicate is measured on: the whole validation pool."""


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
    """On `text` at the trial's end (its last interim evaluation's while it runs, or when it diverged): what the
    choice reads."""
    forgetting: float | None
    domain_loss: float | None
    general_loss: float | None
    text: str | None = None
    """The validation text domain_gain and forgetting were measured on: "pool" (every search trial's and replicate's,
    the whole validation pool), "draw 1 + r" (confirmation round r's, text no other trial was measured on), or
    "interim" (the pool's interim windows: a trial still running, or one that diverged); None before any evaluation.
    Figures on different texts are never compared as if measured on the same one."""
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
    """Standard error of domain_gain over the documents of `text`: how much another text of the same kind and size
    would move it (train_entry.text_losses.TextError); None on the interim windows, or with fewer than two
    documents."""
    forgetting_text_error: float | None = None
    downstream: dict[str, TaskDrop] | None = None
    """A completed trial's score on each downstream task and its drop from the base's (evaluation.downstream); None
    without one. The table spreads it over columns `<task>_score`, `<task>_drop`, ...(sweep.study.table)."""
    downstream_seconds: float | None = None
    """Wall seconds of its downstream evaluation, beside wall_seconds (which includes it)."""

    def drop(self, task: str) -> float | None:
        """Its drop on `task` against the base's; None when not measured."""
        measured = (self.downstream or {}).get(task)
        return measured.drop if measured is not None else None

    @property
    def valid_draw(self) -> int:
        """The validation text its config names for its final figures: 0, the pool, for the search and its
        replicates, 1 + r for confirmation round r (train_entry.trial_config.TrialConfig.valid_draw)."""
        return 0 if self.confirms is None else 1 + self.confirms

    @property
    def on_pool(self) -> bool:
        """Measured on the pool, as every search trial and replicate that ended is: figures comparable with each
        other's."""
        return self.text == POOL

    @property
    def role(self) -> Role:
        if self.confirms is not None:
            return Role.CONFIRMATION
        return Role.REPLICATE if self.replicate_of is not None else Role.SEARCH

    @property
    def finished(self) -> bool:
        return self.status not in (Status.WAITING, Status.RUNNING)
