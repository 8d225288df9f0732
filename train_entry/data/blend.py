"""The training stream and the fixed validation sets, built by megatron-core's BlendedMegatronDatasetBuilder.

The blend weights come from train_entry.mix.blend_weights and the samples from megatron-core's
GPTDataset and BlendedDataset: the same machinery and the same weights a full Megatron run uses,
so a mix ratio means the same thing in a proxy run as in the full run.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch
import torch.distributed as dist
from megatron.core.datasets.blended_dataset import BlendedDataset
from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
from megatron.core.datasets.utils import Split

from train_entry.mix import BLEND_SURPLUS, MixRatio, blend_weights, general_side
from train_entry.trial_config import CorpusPrefixes

if TYPE_CHECKING:
    from megatron.core.tokenizers import MegatronTokenizerBase


class Batch(NamedTuple):
    tokens: torch.Tensor
    """LongTensor [batch, seq_len]: the model's input."""
    labels: torch.Tensor
    """LongTensor [batch, seq_len]: the next token after each input token."""


class TokenStream:
    """The training samples in the order training consumes them: sample i is seen i-th."""

    def __init__(self, dataset: BlendedDataset, sources: Sequence[str], num_samples: int) -> None:
        if len(dataset) < num_samples:
            raise ValueError(f"the blend has {len(dataset)} samples, fewer than {num_samples=}")
        self.dataset = dataset
        self.sources = tuple(sources)
        """Corpus names (CorpusPrefixes fields) in the order of the blend's dataset ids."""
        self.num_samples = num_samples

    def __len__(self) -> int:
        return self.num_samples

    def batch(self, index: int, batch_size: int) -> Batch:
        """Batch number `index`: samples [index * batch_size, (index + 1) * batch_size)."""
        return self.part(index, batch_size, rank=0, parts=1)

    def part(self, index: int, batch_size: int, *, rank: int, parts: int) -> Batch:
        """Part `rank` of `parts` equal runs of batch number `index`: what one worker of a sharded trial trains on,
        so that its workers together train on exactly the batch one process would."""
        if batch_size % parts:
            raise ValueError(f"a batch of {batch_size} sequences does not split evenly over {parts} workers")
        start, stop = index * batch_size, (index + 1) * batch_size
        if index < 0 or stop > self.num_samples:
            raise IndexError(
                f"batch {index} of {batch_size} samples is outside the stream's {self.num_samples} samples"
            )
        share = batch_size // parts
        return _stack(self.dataset, range(start + rank * share, start + (rank + 1) * share))

    def worker_share(self, *, rank: int, parts: int) -> WorkerShare:
        return WorkerShare(self, rank=rank, parts=parts)

    def token_shares(self) -> dict[str, float]:
        """Each corpus's share of the stream's tokens, read from the blend's own per-sample dataset index.

        Every sample is seq_len tokens long, so a corpus's share of samples is its share of tokens.
        """
        counts = np.bincount(self.dataset.dataset_index[: self.num_samples], minlength=len(self.sources))
        return {source: float(count) / self.num_samples for source, count in zip(self.sources, counts)}


@dataclass(frozen=True)
class WorkerShare:
    """A stream as one worker of a sharded trial reads it: its part of every batch."""

    stream: TokenStream
    rank: int
    parts: int

    def batch(self, index: int, batch_size: int) -> Batch:
        return self.stream.part(index, batch_size, rank=self.rank, parts=self.parts)


@dataclass(frozen=True)
class ValidationSets:
    """The fixed held-out sequences every trial of a sweep is measured on."""

    domain: Batch
    general: Batch
    """General-domain English, with the non-English validation text mixed in at its share."""


def build_train_stream(
    prefixes: CorpusPrefixes,
    mix: MixRatio,
    non_english_share: float,
    *,
    num_samples: int,
    seq_len: int,
    seed: int,
    tokenizer: MegatronTokenizerBase,
    cache_dir: Path,
) -> TokenStream:
    """num_samples training sequences of seq_len tokens, blended from the corpora by the mix.

    cache_dir receives megatron-core's index files; it should belong to this process alone,
    since megatron-core writes them in place rather than atomically.
    """
    return build_stream(
        prefixes,
        blend_weights(mix, non_english_share),
        num_samples=num_samples,
        seq_len=seq_len,
        seed=seed,
        tokenizer=tokenizer,
        cache_dir=cache_dir,
    )


def build_stream(
    prefixes: CorpusPrefixes,
    weights: dict[str, float],
    *,
    num_samples: int,
    seq_len: int,
    seed: int,
    tokenizer: MegatronTokenizerBase,
    cache_dir: Path,
) -> TokenStream:
    """num_samples sequences blended from the corpora named in `weights` (CorpusPrefixes fields).

    The built-in base pretrains on the general side alone through this same path.
    """
    dataset = _build(
        Split.train,
        prefixes,
        weights,
        num_samples=num_samples,
        seq_len=seq_len,
        seed=seed,
        tokenizer=tokenizer,
        cache_dir=cache_dir,
    )
    return TokenStream(dataset, tuple(weights), num_samples)


def build_validation_sets(
    prefixes: CorpusPrefixes,
    non_english_share: float,
    *,
    num_sequences: int,
    seq_len: int,
    seed: int,
    tokenizer: MegatronTokenizerBase,
    cache_dir: Path,
) -> ValidationSets:
    """num_sequences held-out sequences per side, the same for every build with the same arguments.

    `prefixes` are the validation corpora. The general side blends general and non-English text
    (1 - share) : share, as the training stream's general side does.
    """
    sides = {"domain": {"domain": 1.0}, "general": general_side(non_english_share)}
    sets = {}
    for side, weights in sides.items():
        dataset = _build(
            Split.valid,
            prefixes,
            weights,
            num_samples=num_sequences,
            seq_len=seq_len,
            seed=seed,
            tokenizer=tokenizer,
            cache_dir=cache_dir,
        )
        sets[side] = _stack(dataset, range(num_sequences))
    return ValidationSets(**sets)


def _paths(prefixes: CorpusPrefixes, weights: dict[str, float]) -> list[str]:
    paths = [getattr(prefixes, source) for source in weights]
    if None in paths:
        raise ValueError(
            f"a non-English share of {weights['non_english']:.3g} of the blend needs a non_english "
            f"indexed corpus, got {prefixes.non_english=}"
        )
    return paths


def _build(
    split: Split,
    prefixes: CorpusPrefixes,
    weights: dict[str, float],
    *,
    num_samples: int,
    seq_len: int,
    seed: int,
    tokenizer: MegatronTokenizerBase,
    cache_dir: Path,
) -> GPTDataset | BlendedDataset:
    """One split's dataset, from its own blend as a full run's --train-data-path / --valid-data-path give it."""
    blend_per_split: list[tuple[list[str], list[float]] | None] = [None] * len(Split)
    blend_per_split[split.value] = (_paths(prefixes, weights), list(weights.values()))
    sizes = [0] * len(Split)
    sizes[split.value] = num_samples
    config = GPTDatasetConfig(
        random_seed=seed,
        sequence_length=seq_len,
        blend_per_split=blend_per_split,
        path_to_cache=str(cache_dir),
        tokenizer=tokenizer,
        reset_position_ids=False,
        reset_attention_mask=False,
        eod_mask_loss=False,
        create_attention_mask=False,  # SDPA builds the causal mask itself
        mid_level_dataset_surplus=BLEND_SURPLUS,  # what corpus samples are sized by (train_entry.mix.tokens_read)
    )
    with _process_group():
        return BlendedMegatronDatasetBuilder(GPTDataset, sizes, lambda: True, config).build()[split.value]


@contextlib.contextmanager
def _process_group() -> Iterator[None]:
    """A process group of one while megatron-core builds, unless the caller already has one.

    BlendedDataset asks torch.distributed for the rank before writing its index cache, which
    fails in a process without a group; a single-rank gloo group on an in-memory store opens no
    port and is gone again when the build is done, with the excepthook torch wraps at each
    init_process_group (a process that builds many blends, as a benchmark does, printed every
    traceback line behind one "[rank0]: " per build).
    """
    if dist.is_initialized():
        yield
        return
    excepthook = sys.excepthook
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()
        sys.excepthook = excepthook


def _stack(dataset: GPTDataset | BlendedDataset, indices: range) -> Batch:
    samples = [dataset[i] for i in indices]
    return Batch(
        tokens=torch.stack([sample["tokens"] for sample in samples]),
        labels=torch.stack([sample["labels"] for sample in samples]),
    )
