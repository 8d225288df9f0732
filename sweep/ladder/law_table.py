"""The observations a law is fitted to: one row per evaluation of every trial of every rung, pruned and guarded
trials included up to where they stopped, so that no argmax and no survivor is ever a data point.

A row says where a trial stood when it was evaluated (its rung's N, the continued-pretraining tokens it had read,
its peak LR and mix, the mean of its LR schedule so far) and what both validation losses and its base's losses
were. A ladder builds its table from its rungs' studies; `sweep law fit` reads one from a CSV (sweep.ladder.
law_csv). Both arrive here as typed rows, and the law reads them as numpy arrays.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated

import numpy as np
from pydantic import Field

from train_entry.config import Seed, StrictConfig
from train_entry.optimizer import OptimizerConfig

MIN_PARAMETERS = 1e3
MAX_PARAMETERS = 1e13
"""N between a thousand and ten trillion non-embedding parameters: any real model, far from a typo in the exponent."""
MAX_TOKENS = 1e15
"""A quadrillion continued-pretraining tokens: a hundred times the largest pretraining runs."""
MAX_LOSS = 100.0
"""Nats per token: a uniform guess over a 10^43-token vocabulary; anything above is a unit error."""
REDRAWS = 1000
"""Draws of rungs tried before a single-size one is kept (two rungs of different sizes: 1 in 2 draws is one size)."""
Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:+-]{0,63}$")]
"""A rung or trial name: printed in reports, never a path."""
Loss = Annotated[float, Field(gt=0.0, le=MAX_LOSS)]
"""A mean token loss, finite: a diverged evaluation is no observation of the law (its trial's earlier ones are)."""


class LawInputError(ValueError):
    """A table of runs that cannot be fitted (a bad file, row or column, or too few rows); the message names it."""


class Observation(StrictConfig):
    """One evaluation of one trial."""

    rung: Name
    """The ladder rung (or, for a team's earlier runs, the model) the trial ran on: one N per rung."""
    trial: Name
    """The trial within its rung (its number, or a run name): a bootstrap resamples whole trials."""
    seed: Seed = 0
    parameters: float = Field(ge=MIN_PARAMETERS, le=MAX_PARAMETERS)
    """N: non-embedding parameters, counted as sweep.scale counts them for proxies and targets alike."""
    tokens: float = Field(gt=0.0, le=MAX_TOKENS)
    """D: continued-pretraining tokens read up to this evaluation."""
    pretrain_tokens: float = Field(gt=0.0, le=MAX_TOKENS)
    """The base's own pretraining tokens: the continued pretraining's LR area is counted in them."""
    lr_fraction: float = Field(gt=0.0, le=1.0)
    """The trial's peak LR over its base's own pretraining peak LR."""
    lr_mean: float = Field(gt=0.0, le=1.0)
    """The mean of the LR over the tokens read so far, as a fraction of the peak (1 for a constant schedule;
    about 0.55 at the end of a cosine decay to 10 % after a short warmup)."""
    domain_share: float = Field(ge=0.0, le=1.0)
    """domain / (general + domain) of the trial's mix."""
    general_loss: Loss
    domain_loss: Loss
    base_general_loss: Loss
    base_domain_loss: Loss

    @property
    def lr_area(self) -> float:
        """The LR area read so far, in the base's pretraining tokens at its max_lr: lr_fraction x lr_mean x tokens /
        pretrain_tokens."""
        return lr_area(self.lr_fraction, self.lr_mean, self.tokens, self.pretrain_tokens)


@dataclass(frozen=True)
class ObservationTable:
    """Rows as numpy columns. Immutable: a bootstrap or a fold selects a new table."""

    rows: tuple[Observation, ...]

    @classmethod
    def of(cls, rows: Sequence[Observation], *, where: Callable[[int], str] = "row {}".format) -> ObservationTable:
        """The table of `rows`; LawInputError when there are none, or when one rung's rows give two sizes (`where`
        names a row by its index, e.g. as a line of the file it came from)."""
        if not rows:
            raise LawInputError("no evaluations to fit a law to")
        _one_size_per_rung(rows, where)
        return cls(tuple(rows))

    def __len__(self) -> int:
        return len(self.rows)

    def _column(self, name: str) -> np.ndarray:
        return np.array([getattr(row, name) for row in self.rows], dtype=float)

    @cached_property
    def parameters(self) -> np.ndarray:
        return self._column("parameters")

    @cached_property
    def lr_area(self) -> np.ndarray:
        return np.array([row.lr_area for row in self.rows], dtype=float)

    @cached_property
    def domain_share(self) -> np.ndarray:
        return self._column("domain_share")

    @cached_property
    def lr_fraction(self) -> np.ndarray:
        return self._column("lr_fraction")

    @cached_property
    def forgetting(self) -> np.ndarray:
        """general_loss / base_general_loss - 1 per row."""
        return self._column("general_loss") / self._column("base_general_loss") - 1.0

    @cached_property
    def domain_gain(self) -> np.ndarray:
        """1 - domain_loss / base_domain_loss per row."""
        return 1.0 - self._column("domain_loss") / self._column("base_domain_loss")

    @cached_property
    def rung(self) -> np.ndarray:
        return np.array([row.rung for row in self.rows], dtype=object)

    @cached_property
    def trial_key(self) -> np.ndarray:
        """(rung, trial) per row, as one string: trials are named within their rung."""
        return np.array([f"{row.rung}/{row.trial}" for row in self.rows], dtype=object)

    @property
    def rungs(self) -> list[str]:
        """Rung names, smallest N first."""
        sizes = {row.rung: row.parameters for row in self.rows}
        return sorted(sizes, key=lambda rung: (sizes[rung], rung))

    @property
    def trials(self) -> int:
        return len(set(self.trial_key))

    def rung_parameters(self, rung: str) -> float:
        return next(row.parameters for row in self.rows if row.rung == rung)

    def select(self, mask: np.ndarray) -> ObservationTable:
        return ObservationTable.of([row for row, keep in zip(self.rows, mask) if keep])

    def without(self, rung: str) -> ObservationTable:
        return self.select(self.rung != rung)

    def only(self, rung: str) -> ObservationTable:
        return self.select(self.rung == rung)

    def resampled(self, rng: np.random.Generator) -> ObservationTable:
        """A bootstrap replicate: rungs drawn with replacement, then within each drawn rung its trials drawn with
        replacement, each bringing its whole curve. A rung drawn twice enters twice, renamed, so that its two
        draws resample their trials independently. A draw of rungs that all share one size, from a table of
        several, is drawn again: no law over N can be fitted to it, and counting it as a failed prediction would
        refuse every three-rung ladder's folds (whose two other rungs are drawn alike half the time)."""
        by_rung: dict[str, dict[str, list[Observation]]] = {}
        for row in self.rows:
            by_rung.setdefault(row.rung, {}).setdefault(row.trial, []).append(row)
        rungs = list(by_rung)
        sizes = [by_rung[rung][next(iter(by_rung[rung]))][0].parameters for rung in rungs]
        drawn = rng.choice(len(rungs), size=len(rungs))
        for _ in range(REDRAWS):
            if len({sizes[i] for i in drawn}) >= min(2, len(set(sizes))):
                break
            drawn = rng.choice(len(rungs), size=len(rungs))
        rows: list[Observation] = []
        for copy, rung in enumerate(drawn):
            trials = list(by_rung[rungs[rung]].values())
            for draw, trial in enumerate(rng.choice(len(trials), size=len(trials))):
                rows.extend(
                    row.model_copy(update={"rung": f"{row.rung}+{copy}", "trial": f"{row.trial}+{draw}"})
                    for row in trials[trial]
                )
        return ObservationTable.of(rows)

    def final_rows(self, rung: str) -> list[Observation]:
        """The rung's evaluations at the most tokens any of its trials read: its completed trials' last ones."""
        rows = [row for row in self.rows if row.rung == rung]
        most = max(row.tokens for row in rows)
        return [row for row in rows if math.isclose(row.tokens, most, rel_tol=1e-9)]


def _one_size_per_rung(rows: Sequence[Observation], where: Callable[[int], str]) -> None:
    sizes: dict[str, tuple[int, float]] = {}
    for index, row in enumerate(rows):
        first = sizes.setdefault(row.rung, (index, row.parameters))
        if not math.isclose(first[1], row.parameters, rel_tol=1e-9):
            raise LawInputError(
                f"{where(index)}, column 'parameters': {row.parameters:g}, but {where(first[0])} of rung "
                f"{row.rung!r} gives {first[1]:g}; a rung is one model size, so name another model's rows as "
                "another rung"
            )


def lr_area(lr_fraction, lr_mean: float, tokens: float, pretrain_tokens: float):
    """S of the law (docs/ladder.md, "The form"): the continued pretraining's LR area over the base's pretraining
    tokens, so that a proxy and a target whose continued pretraining is the same share of their pretraining read
    the same S at the same lr_fraction. `lr_fraction` may be an array."""
    return lr_fraction * lr_mean * tokens / pretrain_tokens


def lr_mean(schedule: OptimizerConfig, *, steps: int, total_steps: int) -> float:
    """The mean of `schedule`'s LR over its first `steps` of `total_steps` optimizer steps, as a fraction of the
    peak: what turns a trial's (or a full run's) peak LR and tokens into its LR area."""
    if not 0 < steps <= total_steps:
        raise ValueError(f"need 0 < steps <= total_steps, got {steps=}, {total_steps=}")
    return float(np.mean([schedule.lr_at(step, peak_lr=1.0, total_steps=total_steps) for step in range(steps)]))
