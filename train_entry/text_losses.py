"""Each validation document's losses, the figure they make, and how much another text of the same kind would move it.

A validation text is whole documents (train_entry.data.draws); its windows are cut inside each document
(train_entry.data.windows), so every scored token belongs to exactly one document. A side's loss (domain, or general
with the non-English text blended in at its share) is a weighted mean of its documents' mean token losses, and
domain_gain and forgetting are ratios of a model's loss to the base's on the same documents.

The text error of such a ratio is estimated over documents, not over windows or tokens: windows cut from one
document share its topic, style and difficulty, so they move together, and an error that took them for independent
draws was too small wherever documents are long (issue 49: a per-sequence error put two confirmation trials outside
their interval). The estimate is a cluster bootstrap (Davison and Hinkley, "Bootstrap Methods and their
Application", 1997, section 3.8: resample the clusters, here documents, with replacement, and recompute the
statistic), paired: a resampled document brings its base loss and the model's together, with its fixed weight. With D
documents the bootstrap's variance is (D - 1) / D of the unbiased one (the plug-in variance of a mean), so it is
scaled back by D / (D - 1); and an error estimated from few documents is itself uncertain, so that a normal 90 %
interval on it covers, it is widened to Student's t with n - 1 degrees of freedom, n the documents' effective number
(effective_documents: a few long documents weigh as few; t_{n-1}(0.95) / z(0.95) is x1.11 at 10, x1.02 at 50). tests/train_entry/test_text_losses.py measures the coverage on synthetic corpora
whose between-document spread is known, and that of the per-sequence error it replaced.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from train_entry.config import StrictConfig

MAX_DOCUMENTS = 1_000_000
"""Documents one side of a validation text holds at most: a 2 GB validation sample of 500-token documents is 10^6
(sweep.run.sample_size bounds the sample far below that)."""
RESAMPLES = 2_000
"""Bootstrap resamples of the documents: the standard error's own Monte Carlo error is then 1.6 % of it
(1 / sqrt(2 (RESAMPLES - 1))), below what a text error is read to."""
BOOTSTRAP_SEED = 0
"""Fixed: the same losses give the same text error, so a figure and its error read back equal."""
MIN_DOCUMENTS_FOR_ERROR = 2
"""A spread over fewer documents is not a spread: no text error is given."""


class SideLosses(StrictConfig):
    """One side of a validation text (domain, or general), document by document, in the text's document order."""

    # A measurement, not a setting: a diverging model's losses may come out non-finite, and are kept as they are.
    model_config = ConfigDict(allow_inf_nan=True)

    losses: list[float] = Field(max_length=MAX_DOCUMENTS)
    """Each document's mean token loss, in nats."""
    tokens: list[int] = Field(max_length=MAX_DOCUMENTS)
    """Tokens scored in each document (every token after its first, in windows of seq_len)."""
    weights: list[float] = Field(max_length=MAX_DOCUMENTS)
    """Each document's share of the side's loss: its corpus's share of the side (general and non-English at the
    blend's weights) times its share of that corpus's scored tokens. They sum to 1."""

    @model_validator(mode="after")
    def _aligned(self) -> SideLosses:
        if not len(self.losses) == len(self.tokens) == len(self.weights):
            raise ValueError(
                f"losses, tokens and weights are one per document, got {len(self.losses)}, {len(self.tokens)} and "
                f"{len(self.weights)}"
            )
        return self

    @property
    def loss(self) -> float:
        """The side's loss: the documents' mean token losses at their weights."""
        return math.fsum(w * loss for w, loss in zip(self.weights, self.losses))

    @property
    def documents(self) -> int:
        return len(self.losses)

    def same_documents(self, other: SideLosses) -> bool:
        """Whether `other` was measured on the same documents (the same token counts in the same order)."""
        return self.tokens == other.tokens


class TextLosses(StrictConfig):
    """A model's losses on one validation text, both sides, document by document."""

    domain: SideLosses
    general: SideLosses


class TextError(StrictConfig):
    """How much a figure would move measured on another text of the same kind and size: the standard error of
    domain_gain and forgetting over the text's documents (cluster bootstrap, module docstring)."""

    domain_gain: float = Field(ge=0.0)
    forgetting: float = Field(ge=0.0)
    documents: dict[str, int] = Field(default_factory=dict)
    """Documents each side's error rests on ("domain", "general")."""

    @classmethod
    def of(cls, base: TextLosses, model: TextLosses) -> TextError | None:
        """None when the two were not measured on the same documents, a side holds fewer than
        MIN_DOCUMENTS_FOR_ERROR, or a loss is not finite (a diverged model)."""
        sides = ((model.domain, base.domain), (model.general, base.general))
        if any(not trial.same_documents(reference) for trial, reference in sides):
            return None
        if any(trial.documents < MIN_DOCUMENTS_FOR_ERROR for trial, _ in sides):
            return None
        if not all(math.isfinite(loss) for pair in sides for side in pair for loss in side.losses):
            return None
        return cls(
            domain_gain=ratio_error(model.domain, base.domain),
            forgetting=ratio_error(model.general, base.general),
            documents={"domain": model.domain.documents, "general": model.general.documents},
        )


def ratio_error(
    model: SideLosses, base: SideLosses, *, resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> float:
    """Standard error of model.loss / base.loss (1 - domain_gain, or 1 + forgetting) over the documents: a paired
    cluster bootstrap, each resampled document keeping its weight, its base loss and the model's, scaled to the
    unbiased variance and widened for few documents (module docstring)."""
    from scipy.stats import norm, t

    weights = np.asarray(base.weights, dtype=float)
    numerator = weights * np.asarray(model.losses, dtype=float)
    denominator = weights * np.asarray(base.losses, dtype=float)
    count = len(weights)
    picks = np.random.default_rng(seed).integers(0, count, size=(resamples, count))
    ratios = numerator[picks].sum(axis=1) / denominator[picks].sum(axis=1)
    freedom = max(effective_documents(weights) - 1.0, 1.0)
    widened = float(t.ppf(0.95, freedom) / norm.ppf(0.95))
    return float(np.std(ratios, ddof=1) * math.sqrt(count / (count - 1)) * widened)


def effective_documents(weights: list[float] | list[int] | np.ndarray) -> float:
    """Kish's effective number of documents, (sum w)^2 / sum w^2 of their weights (or token counts): how many equal
    documents would weigh as evenly. One long document among many short ones counts for little more than one."""
    counts = np.asarray(weights, dtype=float)
    squares = float(np.sum(counts**2))
    return float(counts.sum() ** 2 / squares) if squares > 0 else 0.0
