"""A validation text as a model reads it: every document cut into windows of seq_len tokens, each window inside one
document, so that every scored token, and every window's loss, belongs to exactly one document.

A document of n tokens gives ceil((n - 1) / seq_len) windows: window j reads its tokens j * seq_len ..
(j + 1) * seq_len - 1 and is scored on the next token of each, the last window padded with IGNORE labels that score
nothing. Every token but a document's first is scored once. The side's loss is then a weighted mean of its documents'
mean token losses (train_entry.text_losses): the general side blends the general and non-English corpora at the
training stream's weights, as its validation set always did.

The interim evaluations (what the pruner and the forgetting guard read at every eval_interval) score a fixed subset
of the pool's windows, spread over as many documents as it can reach: the first window of each document in a seeded
order, then the second ones, until each corpus has its share of `sequences`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch

from train_entry.mix import general_side
from train_entry.text_losses import SideLosses, TextLosses
from train_entry.trial_config import CorpusPrefixes

IGNORE = -100
"""The label of a padded position: torch's cross_entropy scores it 0 (its default ignore_index)."""
PAD = 0
"""The token a padded position reads: any id; no scored position attends to it (the model is causal)."""
INTERIM_SEED = 0
"""Orders the documents the interim windows are taken from: fixed, so every sweep over the same pool watches the same
windows."""


@dataclass(frozen=True)
class SideText:
    """One side (domain, or general) of a validation text as windows."""

    tokens: torch.Tensor
    """[windows, seq_len] token ids a window reads."""
    labels: torch.Tensor
    """[windows, seq_len] the next token of each, IGNORE past its document's end."""
    document: np.ndarray
    """[windows] the document each window is cut from (0 .. documents - 1)."""
    corpus: np.ndarray
    """[documents] which of `shares` each document's corpus is."""
    shares: tuple[float, ...]
    """Each corpus's share of the side's loss."""

    @property
    def documents(self) -> int:
        return len(self.corpus)

    @property
    def scored(self) -> np.ndarray:
        """[windows] tokens each window scores."""
        return (self.labels != IGNORE).sum(dim=1).numpy()

    def losses(self, sums: np.ndarray) -> SideLosses:
        """Each document's mean token loss and weight, from each window's summed token loss."""
        tokens = np.bincount(self.document, weights=self.scored, minlength=self.documents)
        totals = np.bincount(self.document, weights=np.asarray(sums, dtype=float), minlength=self.documents)
        corpus_tokens = np.bincount(self.corpus, weights=tokens, minlength=len(self.shares))
        shares = np.asarray(self.shares)[self.corpus]
        return SideLosses(
            losses=(totals / tokens).tolist(),
            tokens=tokens.astype(int).tolist(),
            weights=(shares * tokens / corpus_tokens[self.corpus]).tolist(),
        )

    def subset(self, windows: np.ndarray) -> SideText:
        """The side of these windows only, its documents those they are cut from, in the same order."""
        windows = np.sort(np.asarray(windows, dtype=int))
        kept, document = np.unique(self.document[windows], return_inverse=True)
        return SideText(
            tokens=self.tokens[windows],
            labels=self.labels[windows],
            document=document,
            corpus=self.corpus[kept],
            shares=self.shares,
        )

    def interim_windows(self, sequences: int) -> np.ndarray:
        """The windows of the interim subset: per corpus its share of `sequences` (at least one), the first window of
        each of its documents in a seeded order, then the second ones...; all the corpus has when it has fewer."""
        rank = np.empty(self.documents, dtype=int)
        rank[np.random.default_rng(INTERIM_SEED).permutation(self.documents)] = np.arange(self.documents)
        starts = np.searchsorted(self.document, np.arange(self.documents))  # windows are in document order
        within = np.arange(len(self.document)) - starts[self.document]
        order = np.lexsort((rank[self.document], within))
        chosen = []
        for corpus, share in enumerate(self.shares):
            if share <= 0:
                continue
            mine = order[self.corpus[self.document[order]] == corpus]
            chosen.append(mine[: max(1, round(sequences * share))])
        return np.concatenate(chosen) if chosen else np.zeros(0, dtype=int)


@dataclass(frozen=True)
class ValidationText:
    """Both sides of one validation text."""

    domain: SideText
    general: SideText

    def losses(self, domain_sums: np.ndarray, general_sums: np.ndarray) -> TextLosses:
        return TextLosses(domain=self.domain.losses(domain_sums), general=self.general.losses(general_sums))

    def interim(self, sequences: int) -> ValidationText:
        """The interim subset: `sequences` windows per side (ProxyConfig.eval_sequences)."""
        return ValidationText(
            domain=self.domain.subset(self.domain.interim_windows(sequences)),
            general=self.general.subset(self.general.interim_windows(sequences)),
        )


def read_text(prefixes: CorpusPrefixes, non_english_share: float, *, seq_len: int) -> ValidationText:
    """The text at `prefixes` (one indexed dataset per corpus) as windows of seq_len tokens."""
    general = general_side(non_english_share)
    return ValidationText(
        domain=read_side([prefixes.domain], (1.0,), seq_len=seq_len),
        general=read_side([getattr(prefixes, corpus) for corpus in general], tuple(general.values()), seq_len=seq_len),
    )


def read_side(prefixes: list[str | None], shares: tuple[float, ...], *, seq_len: int) -> SideText:
    # Imported here: megatron-core takes seconds to import.
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    if None in prefixes:
        raise ValueError(f"a non-English share of {shares[-1]:.3g} of the general side needs a non_english corpus")
    windows: list[np.ndarray] = []
    owners: list[int] = []
    corpus: list[int] = []
    for index, prefix in enumerate(prefixes):
        dataset = IndexedDataset(prefix)
        bounds = dataset.document_indices
        for first, end in itertools.pairwise(bounds):
            text = np.concatenate([dataset[i] for i in range(int(first), int(end))]).astype(np.int64)
            cut = _windows(text, seq_len)
            if not cut:
                continue  # a one-token document scores nothing
            windows.extend(cut)
            owners.extend([len(corpus)] * len(cut))
            corpus.append(index)
    stacked = np.stack(windows) if windows else np.zeros((0, 2, seq_len), dtype=np.int64)
    return SideText(
        tokens=torch.from_numpy(stacked[:, 0].copy()),
        labels=torch.from_numpy(stacked[:, 1].copy()),
        document=np.asarray(owners, dtype=int),
        corpus=np.asarray(corpus, dtype=int),
        shares=shares,
    )


def _windows(text: np.ndarray, seq_len: int) -> list[np.ndarray]:
    """[2, seq_len] (tokens, labels) windows of one document."""
    cut = []
    for start in range(0, max(len(text) - 1, 0), seq_len):
        piece = text[start : start + seq_len + 1]
        window = np.empty((2, seq_len), dtype=np.int64)
        window[0], window[1] = PAD, IGNORE
        window[0, : len(piece) - 1] = piece[:-1]
        window[1, : len(piece) - 1] = piece[1:]
        cut.append(window)
    return cut
