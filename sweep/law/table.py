"""The observations a law is fitted to: one row per evaluation of every trial of every rung, pruned and guarded
trials included up to where they stopped, so that no argmax and no survivor is ever a data point.

A row says where a trial stood when it was evaluated (its rung's N, the continued-pretraining tokens it had read,
its peak LR and mix, the mean of its LR schedule so far) and what both validation losses and its base's losses
were. A ladder builds its table from its rungs' studies (sweep.ladder.law_study, with the base's losses each trial
stored); `sweep law fit` reads one from a CSV (sweep.law.csv). Both arrive here as typed rows, and the law reads them
as numpy arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated

import numpy as np
from pydantic import Field, model_validator

from sweep.target.scale import MAX_PARAMETERS, MAX_TOKENS, MIN_PARAMETERS
from train_entry.config import Seed, StrictConfig
from train_entry.trial_config import MAX_LOSS, domain_gain, forgetting

MAX_RATIO = 11.0
"""A run's loss within 11 times its base's either way: a relative change of 10, the edge of what the law's fit
allows (sweep.law.forms). A base loss near zero (1e-30 among 400 rows flipped the answer) is a unit error,
never a run that forgot a hundred-fold."""
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

    @model_validator(mode="after")
    def _near_its_base(self) -> Observation:
        for loss, base in (("general_loss", "base_general_loss"), ("domain_loss", "base_domain_loss")):
            ratio = getattr(self, loss) / getattr(self, base)
            if not 1.0 / MAX_RATIO <= ratio <= MAX_RATIO:
                raise ValueError(
                    f"{loss} {getattr(self, loss):.6g} is {ratio:.3g} times {base} {getattr(self, base):.6g}; a "
                    f"run's loss lies within {MAX_RATIO:g}x of its base's either way (a base loss near zero is a "
                    "unit error)"
                )
        return self

    @property
    def lr_area(self) -> float:
        """The LR area read so far, in the base's pretraining tokens at its max_lr: lr_fraction x lr_mean x tokens /
        pretrain_tokens."""
        return lr_area(self.lr_fraction, self.lr_mean, self.tokens, self.pretrain_tokens)


_TEXT = ("rung", "trial")
_NUMBERS = (
    "seed", "parameters", "pretrain_tokens", "tokens", "lr_fraction", "lr_mean", "domain_share", "general_loss",
    "domain_loss", "base_general_loss", "base_domain_loss",
)  # fmt: skip


@dataclass(frozen=True, eq=False)
class ObservationTable:
    """Rows as numpy columns, one per Observation field: a fit, a fold and each of hundreds of bootstrap draws select
    rows by index, never row by row. Immutable: a bootstrap or a fold takes a new table."""

    columns: dict[str, np.ndarray]

    @classmethod
    def of(cls, rows: Sequence[Observation], *, where: Callable[[int], str] = "row {}".format) -> ObservationTable:
        """The table of `rows`; LawInputError when there are none, or when one rung's rows give two sizes (`where`
        names a row by its index, e.g. as a line of the file it came from)."""
        if not rows:
            raise LawInputError("no evaluations to fit a law to")
        columns = {name: np.array([getattr(row, name) for row in rows], dtype=object) for name in _TEXT}
        columns |= {name: np.array([getattr(row, name) for row in rows], dtype=float) for name in _NUMBERS}
        table = cls(columns)
        table.check_one_size_per_rung(where)
        table.check_one_row_per_evaluation(where)
        return table

    def __len__(self) -> int:
        return len(self.columns["rung"])

    def __getattr__(self, name: str) -> np.ndarray:
        """A column by its Observation field's name."""
        columns = self.__dict__.get("columns", {})
        if name in columns:
            return columns[name]
        raise AttributeError(name)

    @property
    def rows(self) -> tuple[Observation, ...]:
        """The rows as Observations (for ladder.json), built again from the columns."""
        names = _TEXT + _NUMBERS
        return tuple(
            Observation(**{name: (int(value) if name == "seed" else value) for name, value in zip(names, values)})
            for values in zip(*(self.columns[name].tolist() for name in names))
        )

    @cached_property
    def time(self) -> np.ndarray:
        """lr_mean x tokens / pretrain_tokens: the schedule-weighted token share, the LR area at lr_fraction 1."""
        return self.lr_mean * self.tokens / self.pretrain_tokens

    @cached_property
    def lr_area(self) -> np.ndarray:
        return self.lr_fraction * self.time

    @cached_property
    def forgetting(self) -> np.ndarray:
        """general_loss / base_general_loss - 1 per row."""
        return forgetting(self.general_loss, self.base_general_loss)

    @cached_property
    def domain_gain(self) -> np.ndarray:
        """1 - domain_loss / base_domain_loss per row."""
        return domain_gain(self.domain_loss, self.base_domain_loss)

    @cached_property
    def trial_key(self) -> np.ndarray:
        """(rung, trial) per row, as one string: trials are named within their rung."""
        return np.array([f"{rung}/{trial}" for rung, trial in zip(self.rung, self.trial)], dtype=object)

    @cached_property
    def rungs(self) -> list[str]:
        """Rung names, smallest N first."""
        sizes = {rung: self.rung_parameters(rung) for rung in dict.fromkeys(self.rung.tolist())}
        return sorted(sizes, key=lambda rung: (sizes[rung], rung))

    @property
    def trials(self) -> int:
        return len(set(self.trial_key.tolist()))

    def rung_parameters(self, rung: str) -> float:
        return float(self.parameters[np.flatnonzero(self.rung == rung)[0]])

    def take(self, index: np.ndarray, **renamed: np.ndarray) -> ObservationTable:
        """The rows at `index` (repeats allowed), with `renamed` columns (rung, trial) in place of theirs."""
        return ObservationTable({name: renamed.get(name, column[index]) for name, column in self.columns.items()})

    def select(self, mask: np.ndarray) -> ObservationTable:
        index = np.flatnonzero(mask)
        if not len(index):
            raise LawInputError("no evaluations to fit a law to")
        return self.take(index)

    def without(self, rung: str) -> ObservationTable:
        return self.select(self.rung != rung)

    def only(self, rung: str) -> ObservationTable:
        return self.select(self.rung == rung)

    @cached_property
    def trials_by_rung(self) -> dict[str, list[np.ndarray]]:
        """Each rung's trials, as the row indices of each, in the order they first appear."""
        groups: dict[str, dict[str, list[int]]] = {}
        for index, (rung, trial) in enumerate(zip(self.rung.tolist(), self.trial.tolist())):
            groups.setdefault(rung, {}).setdefault(trial, []).append(index)
        return {rung: [np.array(rows) for rows in trials.values()] for rung, trials in groups.items()}

    def resampled(self, rng: np.random.Generator) -> ObservationTable:
        """A bootstrap replicate: rungs drawn with replacement, then within each drawn rung its trials drawn with
        replacement, each bringing its whole curve. A rung drawn twice enters twice, renamed, so that its two
        draws resample their trials independently. A draw of rungs that all share one size, from a table of
        several, is drawn again: no law over N can be fitted to it, and counting it as a failed prediction would
        refuse every three-rung ladder's folds (whose two other rungs are drawn alike half the time)."""
        by_rung = self.trials_by_rung
        rungs = list(by_rung)
        sizes = [self.parameters[by_rung[rung][0][0]] for rung in rungs]
        drawn = rng.choice(len(rungs), size=len(rungs))
        for _ in range(REDRAWS):
            if len({sizes[i] for i in drawn}) >= min(2, len(set(sizes))):
                break
            drawn = rng.choice(len(rungs), size=len(rungs))
        index, rung_names, trial_names = [], [], []
        for copy, rung in enumerate(drawn):
            trials = by_rung[rungs[rung]]
            for draw, trial in enumerate(rng.choice(len(trials), size=len(trials))):
                rows = trials[trial]
                index.append(rows)
                rung_names.append(np.full(len(rows), f"{rungs[rung]}+{copy}", dtype=object))
                trial_names.append(np.full(len(rows), f"{self.trial[rows[0]]}+{draw}", dtype=object))
        return self.take(np.concatenate(index), rung=np.concatenate(rung_names), trial=np.concatenate(trial_names))

    def final(self, rung: str) -> np.ndarray:
        """Indices of the rung's evaluations at the most tokens any of its trials read: its completed trials' last
        ones."""
        mine = np.flatnonzero(self.rung == rung)
        most = np.max(self.tokens[mine])
        return mine[np.isclose(self.tokens[mine], most, rtol=1e-9, atol=0.0)]

    def check_one_row_per_evaluation(self, where: Callable[[int], str]) -> None:
        """LawInputError naming the first row that repeats an earlier one's rung, trial and tokens: one evaluation
        listed twice would count twice in the fit and pass for a replicate in the noise the law is held to."""
        _, first, inverse = np.unique(self.trial_key.astype(str) + "@" + self.tokens.astype(str), return_index=True,
                                      return_inverse=True)  # fmt: skip
        repeated = np.flatnonzero(first[inverse] != np.arange(len(self)))
        if len(repeated):
            row = int(repeated[0])
            earlier = int(first[inverse[row]])
            raise LawInputError(
                f"{where(row)} repeats {where(earlier)}: rung {self.rung[row]!r}, trial {self.trial[row]!r} at "
                f"{self.tokens[row]:g} tokens; each evaluation of a trial is one row (a second seed is another trial)"
            )

    def check_one_size_per_rung(self, where: Callable[[int], str]) -> None:
        """LawInputError naming the first row whose N differs from its rung's first row's."""
        for rung in dict.fromkeys(self.rung.tolist()):
            mine = np.flatnonzero(self.rung == rung)
            odd = mine[~np.isclose(self.parameters[mine], self.parameters[mine[0]], rtol=1e-9, atol=0.0)]
            if len(odd):
                first, row = int(mine[0]), int(odd[0])
                raise LawInputError(
                    f"{where(row)}, column 'parameters': {self.parameters[row]:g}, but {where(first)} of rung "
                    f"{rung!r} gives {self.parameters[first]:g}; a rung is one model size, so name another model's "
                    "rows as another rung"
                )


def lr_area(lr_fraction, lr_mean: float, tokens: float, pretrain_tokens: float):
    """S of the law (docs/ladder.md, "The form"): the continued pretraining's LR area over the base's pretraining
    tokens, so that a proxy and a target whose continued pretraining is the same share of their pretraining read
    the same S at the same lr_fraction. `lr_fraction` may be an array."""
    return lr_fraction * lr_mean * tokens / pretrain_tokens
