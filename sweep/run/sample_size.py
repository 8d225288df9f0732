"""How many tokens of each corpus a sweep may read, and so how large a sample of each corpus it prepares.

A sample holds `margin` times the most tokens any run of the sweep reads from the corpus (a trial at the space's
largest share of it, the built-in base's pretraining, the validation texts), and at least `min_tokens`: no run
reads past the end of its sample, so none repeats a document, and a corpus smaller than that is read whole.
"""

from __future__ import annotations

import math
from collections import defaultdict

from sweep.space import SearchSpace
from sweep.spec.spec import SweepSpec
from train_entry.builtin_base import EVAL_SEQUENCES
from train_entry.mix import MixRatio, blend_weights, general_side, tokens_read


def sample_tokens(spec: SweepSpec) -> dict[str, int]:
    """Tokens each corpus's sample holds, by corpus name ("domain.train", "general.valid", ...)."""
    sample = spec.data.sample
    return {name: max(math.ceil(sample.margin * need), sample.min_tokens) for name, need in tokens_needed(spec).items()}


def tokens_needed(spec: SweepSpec) -> dict[str, int]:
    """The most tokens one run of the sweep reads from each corpus (megatron-core's blend arithmetic)."""
    data, proxy = spec.data, spec.proxy
    share = data.non_english.share if data.non_english is not None else 0.0
    need: dict[str, int] = defaultdict(int)

    def reads(split: str, weights: dict[str, float], samples: int, seq_len: int) -> None:
        for corpus, weight in weights.items():
            name = f"{corpus}.{split}"
            need[name] = max(need[name], tokens_read(samples, weight, seq_len))

    for mix in _extreme_mixes(spec.space):
        reads("train", blend_weights(mix, share), proxy.steps * proxy.batch_size, proxy.seq_len)
    validation = [(proxy.eval_sequences, proxy.seq_len)]
    builtin = spec.base.builtin
    if builtin is not None:
        reads("train", general_side(share), builtin.pretrain_steps * builtin.batch_size, builtin.seq_len)
        validation.append((EVAL_SEQUENCES, builtin.seq_len))
    for sequences, seq_len in validation:
        reads("valid", validation_weights(spec), sequences, seq_len)
    texts = 1 + confirmation_draws(spec)
    for corpus, weight in validation_weights(spec).items():  # each text holds at least an interim set's windows
        name = f"{corpus}.valid"
        need[name] = max(need[name], texts * tokens_read(proxy.eval_sequences, weight, proxy.seq_len))
    return dict(need)


def confirmation_draws(spec: SweepSpec) -> int:
    """Draws of validation text a sweep holds apart from its pool: one per confirmation round, so that each candidate
    is confirmed on text no other trial was measured on."""
    confirmation = spec.search.confirmation
    return confirmation.candidates if confirmation.seeds > 0 else 0


def validation_weights(spec: SweepSpec) -> dict[str, float]:
    """Each validation corpus's weight in its validation set: the domain set is all domain text, the general set
    blends general and non-English text as the training stream's general side does."""
    share = spec.data.non_english.share if spec.data.non_english is not None else 0.0
    return {"domain": 1.0, **general_side(share)}


def _extreme_mixes(space: SearchSpace) -> list[MixRatio]:
    """The mixes with the largest and the smallest domain share the space holds."""
    mixes = [space.mix.low, space.mix.high] if not isinstance(space.mix, list) else list(space.mix)
    return [max(mixes, key=lambda mix: mix.domain_share), min(mixes, key=lambda mix: mix.domain_share)]
