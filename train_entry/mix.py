"""Mix ratios ("general:domain") and the blend weights they give, shared by proxy and full runs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer

from train_entry.config import shown

BLEND_SURPLUS = 0.005
"""Samples megatron-core's blend builds beyond what it draws from each corpus (its mid_level_dataset_surplus,
set to this by train_entry.data.blend): what a corpus must hold beyond its share of the blend."""


@dataclass(frozen=True)
class MixRatio:
    """A general:domain sampling ratio such as 4:1 (four general tokens per domain token)."""

    general: float
    domain: float

    def __post_init__(self) -> None:
        for side, value in (("general", self.general), ("domain", self.domain)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"mix ratio {side} side must be a positive number, got {value}")

    @classmethod
    def parse(cls, text: str) -> MixRatio:
        """Reads "general:domain", e.g. "4:1" or "1:1.5"."""
        try:
            general, domain = (float(part) for part in text.strip().split(":"))
            return cls(general, domain)
        except ValueError:
            raise ValueError(
                f'mix ratio must be "general:domain" with two positive numbers, got {shown(text)}'
            ) from None

    @classmethod
    def from_domain_share(cls, domain_share: float) -> MixRatio:
        return cls(1.0 - domain_share, domain_share)

    @property
    def domain_share(self) -> float:
        """domain / (general + domain): the fraction of training tokens drawn from the domain."""
        return self.domain / (self.general + self.domain)

    @property
    def log_ratio(self) -> float:
        """log(general / domain): the axis a continuous mix search samples on."""
        return math.log(self.general / self.domain)

    def __str__(self) -> str:
        return f"{_number(self.general)}:{_number(self.domain)}"


def ratio_of(log_ratio: float) -> MixRatio:
    """A mix on a range's grid (or extrapolated by a ladder), written with its smaller side 1 and 3 significant
    digits ("1.5:1"), and exactly that ratio: the point promoted is the point shown."""
    larger = float(f"{math.exp(abs(log_ratio)):.3g}")
    return MixRatio(larger, 1.0) if log_ratio >= 0 else MixRatio(1.0, larger)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4g}"


def blend_weights(mix: MixRatio, non_english_share: float) -> dict[str, float]:
    """Sampling weights of the corpora, summing to 1.

    The non-English share is split out of the general side, as in the reference recipe
    (general:domain 1:1 with 10 % of the general side non-English gives 0.45 / 0.05 / 0.5).
    """
    general = 1.0 - mix.domain_share
    weights = {"general": general * (1.0 - non_english_share), "domain": mix.domain_share}
    if non_english_share > 0:
        weights["non_english"] = general * non_english_share
    return weights


def general_side(non_english_share: float) -> dict[str, float]:
    """Weights of the general side alone: English general text and its non-English share.

    What the built-in base pretrains on, and what the general validation set is drawn from.
    """
    weights = {"general": 1.0 - non_english_share}
    if non_english_share > 0:
        weights["non_english"] = non_english_share
    return weights


def _coerce(value: Any) -> MixRatio:
    if isinstance(value, MixRatio):
        return value
    if not isinstance(value, str):
        raise ValueError(f'a mix ratio is a "general:domain" string such as "4:1", got {shown(value)}')
    return MixRatio.parse(value)


Mix = Annotated[MixRatio, BeforeValidator(_coerce), PlainSerializer(str, return_type=str)]
"""A MixRatio field of a config: written and read as "general:domain"."""


def tokens_read(num_samples: int, weight: float, seq_len: int) -> int:
    """The most tokens a blend of num_samples sequences of seq_len tokens reads from a corpus of this weight.

    megatron-core builds the corpus's dataset for ceil(ceil(num_samples x weight) x (1 + BLEND_SURPLUS)) samples,
    each seq_len tokens and one more shared with the next; a corpus holding this many tokens is never repeated.
    """
    samples = math.ceil(math.ceil(num_samples * weight) * (1 + BLEND_SURPLUS))
    return samples * seq_len + 1
