"""Megatron indexed datasets (.bin/.idx prefixes) as corpora: the full run's own data, read by the proxies as it is.

A prefix holds token ids, not text, so nothing is tokenised: the proxies read it with the base's tokenizer only
when the tokenizer that made it is the base's (the spec names it; their vocabularies are compared). One prefix no
larger than its sample is read in place; a larger one, or several, give a sample of whole strata of sequences
(spread over the .bin files as text samples are, train_entry.data.sample) copied into one cached dataset.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from megatron.core.datasets.indexed_dataset import DType, IndexedDataset, IndexedDatasetBuilder

from train_entry.data.cache import cached_dir, digest
from train_entry.data.corpus import CorpusError, CorpusStats, OnProgress, SampleProgress
from train_entry.data.fingerprint import corpus_fingerprint
from train_entry.data.indexed import STATS, TOKENS, IndexedCorpus, read_stats
from train_entry.data.megatron_index import check_index
from train_entry.data.sample import spread_order, stratum_bytes
from train_entry.data.tokenizer import load_tokenizer

SAMPLE_VERSION = 1
"""Part of a copied sample's cache key: bump it when what is written changes."""


def bin_path(prefix: Path) -> Path:
    return Path(f"{prefix}.bin")


def idx_path(prefix: Path) -> Path:
    return Path(f"{prefix}.idx")


def open_prefix(prefix: Path) -> IndexedDataset:
    """The indexed dataset at `prefix`, once its .idx is shown to describe its .bin (train_entry.data.megatron_index):
    CorpusError naming the file and what is inconsistent, where megatron-core would assert or map garbage."""
    check_index(idx_path(prefix), bin_path(prefix))
    return IndexedDataset(str(prefix))


def prefix_tokens(prefix: Path) -> int:
    """The tokens in a prefix's sequences, read from its index."""
    dataset = open_prefix(prefix)  # held: its memory map closes with it, under the lengths' view
    return int(dataset.sequence_lengths.sum(dtype=np.int64))


def check_tokenizer(made_by: Path, base: Path) -> None:
    """CorpusError unless the tokenizer that made the prefixes maps every id to the same token as the base's."""
    if Path(made_by).resolve() == Path(base).resolve():
        return
    theirs, ours = load_tokenizer(made_by), load_tokenizer(base)
    difference = None
    if len(theirs) != len(ours):
        difference = f"{len(theirs):,} tokens against {len(ours):,}"
    elif theirs.eos_token_id != ours.eos_token_id:
        difference = f"end-of-document id {theirs.eos_token_id} against {ours.eos_token_id}"
    else:
        ids, base_ids = theirs.get_vocab(), ours.get_vocab()
        changed = sorted(token for token, i in ids.items() if base_ids.get(token) != i)
        if changed:
            difference = f"{len(changed):,} ids differ (e.g. {changed[0]!r}: {ids[changed[0]]} against {base_ids.get(changed[0])})"
    if difference is not None:
        raise CorpusError(
            f"the Megatron prefixes were made by tokenizer {made_by}, which is not the base's tokenizer {base} "
            f"({difference}); re-tokenise them with {base}, or use the base they were made for"
        )


def sample_prefixes(
    prefixes: Sequence[Path],
    *,
    vocab_size: int,
    cache_root: Path,
    max_tokens: int | None,
    on_progress: OnProgress | None = None,
) -> IndexedCorpus:
    """The prefixes as the proxies read them: one within max_tokens in place, else a copied sample of whole strata
    of at least max_tokens tokens (all of them when they hold fewer). CorpusError for an id outside the vocabulary."""
    datasets = [open_prefix(prefix) for prefix in prefixes]
    total = sum(int(dataset.sequence_lengths.sum(dtype=np.int64)) for dataset in datasets)
    if len(prefixes) == 1 and (max_tokens is None or total <= max_tokens):
        _check_ids(prefixes[0], datasets[0], vocab_size)
        size = bin_path(prefixes[0]).stat().st_size
        stats = CorpusStats(
            documents=len(datasets[0]), lines=len(datasets[0]), tokens=total, corpus_bytes=size, sampled_bytes=size
        )
        return IndexedCorpus(prefix=str(prefixes[0]), stats=stats)
    files = [path for prefix in prefixes for path in (idx_path(prefix), bin_path(prefix))]
    key = digest(f"megatron-sample-{SAMPLE_VERSION}", corpus_fingerprint(files), vocab_size, max_tokens or "whole")
    entry = cache_root / f"megatron-{Path(prefixes[0]).name}-{key[:20]}"
    copy = _Copy(list(prefixes), datasets, vocab_size, max_tokens or total, on_progress)
    cached_dir(entry, copy.write)
    return IndexedCorpus(prefix=str(entry / TOKENS), stats=read_stats(entry))


def _check_ids(prefix: Path, dataset: IndexedDataset, vocab_size: int, tokens: np.ndarray | None = None) -> None:
    """CorpusError unless every id of `tokens` (the whole prefix when None) is in [0, vocab_size): an id outside
    would index past the embedding in the trial, and a negative one would wrap around in a copied sample."""
    if tokens is None:
        tokens = np.memmap(bin_path(prefix), dtype=dataset.index.dtype, mode="r")
    if not tokens.size:
        return
    low, high = int(tokens.min()), int(tokens.max())
    if low < 0:
        raise CorpusError(f"{prefix}: token id {low} is negative: token ids run from 0 to the vocabulary's size")
    if high >= vocab_size:
        raise CorpusError(
            f"{prefix}: token id {high} is outside the base's {vocab_size:,}-token vocabulary: "
            f"the prefix was made by another tokenizer than the one the spec names"
        )


@dataclass(frozen=True)
class _Stratum:
    dataset: int
    first: int
    """First sequence of the stratum (sequences are placed by where their tokens start in the .bin)."""
    end: int
    tokens: int
    stored: int


@dataclass
class _Copy:
    prefixes: list[Path]
    datasets: list[IndexedDataset]
    vocab_size: int
    max_tokens: int
    on_progress: OnProgress | None

    def write(self, directory: Path) -> None:
        strata = self._strata()
        chosen, tokens = [], 0
        for index in spread_order(len(strata)):
            if tokens >= self.max_tokens:
                break
            chosen.append(index)
            tokens += strata[index].tokens
        builder = IndexedDatasetBuilder(str(directory / f"{TOKENS}.bin"), dtype=DType.optimal_dtype(self.vocab_size))
        stats = CorpusStats(corpus_bytes=sum(s.stored for s in strata))
        for index in sorted(chosen):
            self._copy(strata[index], builder, stats)
        builder.finalize(str(directory / f"{TOKENS}.idx"))
        stats.lines = stats.documents
        (directory / STATS).write_text(json.dumps(dataclasses.asdict(stats), indent=2) + "\n")

    def _strata(self) -> list[_Stratum]:
        size = stratum_bytes(self.max_tokens * DType.size(DType.optimal_dtype(self.vocab_size)))
        strata = []
        for number, (prefix, dataset) in enumerate(zip(self.prefixes, self.datasets)):
            stored = os.path.getsize(bin_path(prefix))
            count = -(-stored // size)
            bounds = [k * stored // count for k in range(count + 1)]
            firsts = np.searchsorted(dataset.index.sequence_pointers, bounds[:-1]).tolist() + [len(dataset)]
            itemsize = DType.size(dataset.index.dtype)
            pointers = np.append(dataset.index.sequence_pointers, stored)
            for k, (first, end) in enumerate(itertools.pairwise(firsts)):
                tokens = int(pointers[end] - pointers[first]) // itemsize
                strata.append(_Stratum(number, first, end, tokens, bounds[k + 1] - bounds[k]))
        return strata

    def _copy(self, stratum: _Stratum, builder: IndexedDatasetBuilder, stats: CorpusStats) -> None:
        dataset, prefix = self.datasets[stratum.dataset], self.prefixes[stratum.dataset]
        for i in range(stratum.first, stratum.end):
            sequence = dataset[i]
            builder.add_document(sequence, [len(sequence)])
            _check_ids(prefix, dataset, self.vocab_size, sequence)
        stats.documents += stratum.end - stratum.first
        stats.tokens += stratum.tokens
        stats.sampled_bytes += stratum.stored
        if self.on_progress is not None:
            self.on_progress(
                SampleProgress(stats.sampled_bytes, stats.corpus_bytes, stats.documents, stats.tokens, self.max_tokens)
            )
