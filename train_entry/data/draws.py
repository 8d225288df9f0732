"""A validation corpus split into disjoint draws of whole documents, so that a trial can be measured on text no other
trial was measured on.

Every search trial of a sweep is measured on the same validation sequences: what it says about the budget holds for
those sequences, and a pick judged on them alone can pass on them and fail on any other text of the same kind. The
confirmation trials are measured on draws of their own (sweep/run/prepare.py). In a seeded shuffle of the documents,
draw 0 takes documents until it holds `draw_tokens`, draw 1 the next ones, and so on: draw d is the same however many
draws are asked for, so a benchmark can ask for more draws than a sweep used and measure on ones it never saw. A
corpus too small for full draws is dealt out round-robin instead (each draw's sequences then repeat its text), and
one with fewer documents than draws is refused.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from train_entry.data.cache import cached_dir, digest
from train_entry.data.corpus import CorpusError
from train_entry.data.fingerprint import prefix_fingerprint

DRAWS_VERSION = 1
"""Part of the cache key: bump it when how documents are dealt into draws changes."""
PARTITION_SEED = 0
"""Seeds the shuffle of the documents. Fixed, not the sweep's proxy.seed: the partition is a property of the
corpus, so every sweep over the same validation corpus measures its search on the same draw 0 (two sweeps compare on
the same text), and a draw beyond a sweep's last is text none of them was measured on."""


def draw_prefix(entry: Path, draw: int) -> str:
    return str(entry / f"draw_{draw}")


def split_draws(
    prefix: str, *, draws: int, draw_tokens: int, cache_root: Path, label: str, seed: int = PARTITION_SEED
) -> list[str]:
    """The prefixes of `draws` disjoint draws of the indexed dataset at `prefix`, cached under cache_root. `label`
    names the corpus in a refusal (e.g. data.domain.valid)."""
    key = digest(f"validation-draws-{DRAWS_VERSION}", prefix_fingerprint(prefix), draws, draw_tokens, seed)
    entry = cache_root / f"draws-{Path(prefix).parent.name}-{key[:20]}"
    cached_dir(entry, lambda directory: _write(prefix, directory, draws, draw_tokens, seed, label))
    return [draw_prefix(entry, draw) for draw in range(draws)]


def dealt(lengths: np.ndarray, *, draws: int, draw_tokens: int, seed: int) -> list[np.ndarray]:
    """Document indices of each draw, given each document's tokens: whole documents in a seeded shuffle, filling
    draw 0 to draw_tokens, then draw 1...; round-robin when the documents hold fewer than draws x draw_tokens."""
    order = np.random.default_rng(seed).permutation(len(lengths))
    if int(lengths.sum()) < draws * draw_tokens:
        return [np.sort(order[draw::draws]) for draw in range(draws)]
    chosen: list[list[int]] = [[]]
    held = 0
    for document in order.tolist():
        if held >= draw_tokens:
            if len(chosen) == draws:
                break
            chosen.append([])
            held = 0
        chosen[-1].append(document)
        held += int(lengths[document])
    if len(chosen) < draws or held < draw_tokens:  # long documents used the text up unevenly: deal it out instead
        return [np.sort(order[draw::draws]) for draw in range(draws)]
    return [np.sort(np.asarray(documents)) for documents in chosen]


def _write(prefix: str, directory: Path, draws: int, draw_tokens: int, seed: int, label: str) -> None:
    # Imported here: megatron-core takes seconds to import, and a sweep whose draws are cached never writes them.
    from megatron.core.datasets.indexed_dataset import IndexedDataset, IndexedDatasetBuilder

    dataset = IndexedDataset(prefix)
    bounds = dataset.document_indices  # sequence index where each document starts, and the end
    documents = len(bounds) - 1
    if documents < draws:
        raise CorpusError(
            f"{label} holds {documents} document(s) and the sweep measures its trials on {draws} disjoint draws of it "
            "(the search's, and one per confirmation candidate): add held-out documents, or confirm fewer candidates "
            "(search.confirmation.candidates)"
        )
    lengths = np.add.reduceat(dataset.sequence_lengths.astype(np.int64), bounds[:-1]) if documents else np.zeros(0)
    for draw, chosen in enumerate(dealt(lengths, draws=draws, draw_tokens=draw_tokens, seed=seed)):
        builder = IndexedDatasetBuilder(f"{draw_prefix(directory, draw)}.bin", dtype=dataset.index.dtype)
        for document in chosen:
            sequences = range(int(bounds[document]), int(bounds[document + 1]))
            parts = [dataset[i] for i in sequences]
            builder.add_document(np.concatenate(parts), [len(part) for part in parts])
        builder.finalize(f"{draw_prefix(directory, draw)}.idx")
