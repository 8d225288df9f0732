"""ladder.json: a ladder run's design (each rung matched to the target, the search every rung ran), the evaluations of
its finished rungs and of a team's earlier runs, and the loss law fitted to them with its prediction at the target,
its leave-one-rung-out folds and the critical share's trend.

Written by `sweep run` as a LadderSummary and read back through the same type (a corrupt file is an input error
naming it) by `sweep status`, the report and promotion; promotion refits the law's intervals at its own target from
the evaluations kept here.
"""

from __future__ import annotations

import math

from pydantic import Field, model_validator

from sweep.files.compat import LADDER
from sweep.files.records import read_model, write_model
from sweep.files.rundir import RunDir
from sweep.ladder.config import MAX_RUNGS, MIN_RUNGS, RungName
from sweep.ladder.rungs import RungDesign
from sweep.law.config import LawSettings
from sweep.law.optimum import SearchBox
from sweep.law.runs import LawFitReport
from sweep.law.table import Observation, ObservationTable
from sweep.space import Box, SearchSpace
from sweep.study.config import PickConfig, SearchConfig
from sweep.target.scale import LadderTarget
from train_entry.config import StrictConfig

MAX_OBSERVATIONS = 500_000
"""As many evaluations as a CSV of runs may hold (sweep.law.csv): far above any ladder's."""


class LadderMismatch(ValueError):
    """The run directory holds a ladder of other rungs: resuming would mix two ladders."""


class RungResult(StrictConfig):
    """One finished rung: how much of it the law sees."""

    name: RungName
    trials: int = Field(ge=0)
    """Trials with at least one evaluation the law can use."""
    evaluations: int = Field(ge=0)


class LadderSummary(StrictConfig):
    """Read back from a run directory that may have been copied or received: every rung name it holds names a
    folder under rungs/, so each is one plain path component, and the finished rungs are the planned ones."""

    target: str = Field(min_length=1, max_length=1000)
    """The spec's ladder.target, a preset name or a target file."""
    at_target: LadderTarget
    """The target as the ladder was designed for it: N, pretraining tokens, the full run's tokens and schedule."""
    forgetting_budget: float = Field(ge=0.0)
    pick: PickConfig
    """The spec's objective.pick: the law's answer follows the pick's rule, P(forgetting <= budget) >=
    min_probability."""
    space: SearchSpace
    search: SearchConfig
    """The sampler (a grid: the same design at every rung), pruner, forgetting guard and replicates of every rung."""
    rungs: list[RungDesign] = Field(min_length=MIN_RUNGS, max_length=MAX_RUNGS)
    """Every planned rung, smallest first, as it is matched."""
    finished: list[RungResult] = Field(default_factory=list)
    runs: str | None = None
    """The CSV of earlier runs whose evaluations entered the law (ladder.runs), if any."""
    observations: list[Observation] = Field(default_factory=list, max_length=MAX_OBSERVATIONS)
    """Every evaluation the law is fitted to: the finished rungs', then the earlier runs'."""
    settings: LawSettings
    fit: LawFitReport | None = None
    """The law, its prediction at the target, its folds and its trend, once every rung has finished."""
    note: str = Field("", max_length=10_000)
    """Why there is no fit when every rung has finished."""

    @model_validator(mode="after")
    def _rungs_are_planned(self) -> LadderSummary:
        done = [rung.name for rung in self.finished]
        if len(set(self.planned)) < len(self.planned) or done != self.planned[: len(done)]:
            raise ValueError(f"the finished rungs {done} are not the first of the planned rungs {self.planned}")
        return self

    @property
    def planned(self) -> list[str]:
        return [rung.name for rung in self.rungs]

    @property
    def is_finished(self) -> bool:
        return len(self.finished) == len(self.rungs)

    @property
    def box(self) -> SearchBox:
        return search_box(self.space)

    def table(self) -> ObservationTable:
        """The evaluations as the law's table; LawInputError (an input error) when they cannot make one."""
        return ObservationTable.of(self.observations)


def search_box(space: SearchSpace) -> SearchBox:
    """The searched ranges of lr_fraction and domain share: where the law's optimum may be promoted from."""
    box = Box.of(space)
    shares = sorted(1.0 / (1.0 + math.exp(log_ratio)) for log_ratio in box.log_ratio)
    return SearchBox(
        lr_fraction=(math.exp(box.log_lr[0]), math.exp(box.log_lr[1])), domain_share=(shares[0], shares[1])
    )


def read_ladder(run: RunDir) -> LadderSummary:
    """CorruptFile (an input error, exit 2) naming ladder.json when it is not what `sweep run` wrote."""
    return read_model(run.ladder_json, LadderSummary, fmt=LADDER, max_bytes=256 << 20)


def write_ladder(run: RunDir, summary: LadderSummary) -> None:
    write_model(run.inside(run.ladder_json), summary, LADDER)
