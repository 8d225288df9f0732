"""A validation corpus dealt into disjoint texts of whole documents: the validation pool, which the search's trials
are measured on, and one draw per confirmation round, which only that round's trials are measured on.

Every search trial's final figures are measured on the whole pool, so what they say estimates the text population
the pool is a sample of, not one small draw of it (issue 49: a draw of 64 sequences held 9 documents on a corpus of
long ones, and on the bundled general text 4). A confirmation is measured on text no other trial was.

In a seeded shuffle of the documents they are dealt in turn, by count, so that every text holds its share of the
documents whatever their lengths: with C confirmation draws, of every 2C documents C go to the pool and one to each
draw (POOL_SHARE of them to the pool). A corpus whose parts are independent of each other (a file of unrelated
records, say) may have its documents cut into chunks of `chunk_tokens` that count as documents of their own; only
its owner can say so (data.<side>.independent_chunks). check_texts refuses texts with too few documents for their
text error to mean anything, before any compute, saying how many there are and how to have more.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from train_entry.data.cache import cached_dir, digest
from train_entry.data.corpus import CorpusError
from train_entry.data.fingerprint import prefix_fingerprint
from train_entry.text_losses import effective_documents

DRAWS_VERSION = 2
"""Part of the cache key: bump it when how documents are dealt into texts changes (2: the pool and draws by count)."""
PARTITION_SEED = 0
"""Seeds the shuffle of the documents. Fixed, not the sweep's proxy.seed: the partition is a property of the
corpus, so every sweep over the same validation corpus measures its search on the same pool (two sweeps compare on
the same text)."""
POOL_SHARE = 0.5
"""Of the documents, the pool's when there are confirmation draws (all of them when there are none). The pool's
error is common to every search trial, and a draw's to its round's trials: halves keep both of a size, the pool at
twice a draw's documents with two draws, as the default spec confirms at most two candidates."""
MIN_DOCUMENTS = 10
"""Fewest documents one side of a text may hold: a text error from fewer rests on fewer than 9 degrees of freedom,
and a figure from them is one of a few documents (train_entry.text_losses widens the error for the few there are)."""


LENGTHS = "lengths.json"
"""Beside the texts: each text's document lengths in tokens, so a cached split is checked without megatron-core."""


def text_prefix(entry: Path, text: int) -> str:
    return str(entry / ("pool" if text == 0 else f"draw_{text}"))


def text_lengths(prefix: str) -> list[int]:
    """The tokens of each document of a text split_texts wrote, read from its entry's LENGTHS."""
    path = Path(prefix)
    lengths = json.loads((path.parent / LENGTHS).read_text())
    return [int(n) for n in lengths[path.name]]


INTERIM = "interim"
"""The name of the pool's interim windows (train_entry.data.windows): what a figure is on before a trial's end."""


def text_name(text: int) -> str:
    """How a text is named everywhere a figure is shown: "pool", or "draw r" for confirmation round r - 1."""
    return "pool" if text == 0 else f"draw {text}"


def text_words(name: str) -> str:
    """A text's name in a sentence: "the pool", "draw 1", "the interim windows"."""
    return {"pool": "the pool", INTERIM: "the interim windows"}.get(name, name)


def split_texts(
    prefix: str,
    *,
    draws: int,
    cache_root: Path,
    label: str,
    chunk_tokens: int | None = None,
    seed: int = PARTITION_SEED,
) -> list[str]:
    """The prefixes of the pool and the `draws` confirmation draws of the indexed dataset at `prefix`, in that order,
    cached under cache_root. `label` names the corpus in a refusal (e.g. data.domain.valid)."""
    key = digest(f"validation-texts-{DRAWS_VERSION}", prefix_fingerprint(prefix), draws, chunk_tokens, seed)
    entry = cache_root / f"texts-{Path(prefix).parent.name}-{key[:20]}"
    cached_dir(entry, lambda directory: _write(prefix, directory, draws, chunk_tokens, seed, label))
    return [text_prefix(entry, text) for text in range(1 + draws)]


def dealt(units: int, *, draws: int, seed: int) -> list[np.ndarray]:
    """The units (documents, or chunks) of the pool and of each draw, in order: a seeded shuffle dealt in turn, C of
    every 2C to the pool and one to each draw."""
    order = np.random.default_rng(seed).permutation(units)
    if draws == 0:
        return [np.sort(order)]
    turn = [0] * draws + list(range(1, draws + 1))
    owner = np.asarray([turn[k % len(turn)] for k in range(units)], dtype=int)
    return [np.sort(order[owner == text]) for text in range(1 + draws)]


def units_of(lengths: np.ndarray, chunk_tokens: int | None) -> list[tuple[int, int, int]]:
    """(document, first token, end token) of every unit: each document whole, or cut into chunks of chunk_tokens."""
    if chunk_tokens is None:
        return [(document, 0, int(length)) for document, length in enumerate(lengths)]
    return [
        (document, start, min(start + chunk_tokens, int(length)))
        for document, length in enumerate(lengths)
        for start in range(0, int(length), chunk_tokens)
    ]


def _write(prefix: str, directory: Path, draws: int, chunk_tokens: int | None, seed: int, label: str) -> None:
    # Imported here: megatron-core takes seconds to import, and a sweep whose texts are cached never writes them.
    from megatron.core.datasets.indexed_dataset import IndexedDataset, IndexedDatasetBuilder

    dataset = IndexedDataset(prefix)
    bounds = dataset.document_indices  # sequence index where each document starts, and the end
    lengths = np.add.reduceat(dataset.sequence_lengths.astype(np.int64), bounds[:-1]) if len(bounds) > 1 else []
    units = units_of(np.asarray(lengths), chunk_tokens)
    if len(units) < 1 + draws:
        kind = "document(s)" if chunk_tokens is None else f"chunk(s) of {chunk_tokens} tokens"
        raise CorpusError(
            f"{label} holds {len(units)} {kind} and the sweep measures its trials on {1 + draws} disjoint texts of it "
            "(the validation pool, and one draw per confirmation candidate): add held-out documents, or confirm "
            "fewer candidates (search.confirmation.candidates)"
        )
    lengths_of: dict[str, list[int]] = {}
    for text, chosen in enumerate(dealt(len(units), draws=draws, seed=seed)):
        prefix_out = text_prefix(directory, text)
        builder = IndexedDatasetBuilder(f"{prefix_out}.bin", dtype=dataset.index.dtype)
        lengths_of[Path(prefix_out).name] = []
        for unit in chosen:
            document, start, end = units[int(unit)]
            parts = [dataset[i] for i in range(int(bounds[document]), int(bounds[document + 1]))]
            tokens = np.concatenate(parts)[start:end]
            builder.add_document(tokens, [len(tokens)])
            lengths_of[Path(prefix_out).name].append(len(tokens))
        builder.finalize(f"{prefix_out}.idx")
    (directory / LENGTHS).write_text(json.dumps(lengths_of))


@dataclass(frozen=True)
class TextSide:
    """What check_texts needs of one side (domain, or general with the non-English text) of one text."""

    name: str
    """e.g. "the pool's general side" or "draw 1's domain side"."""
    corpora: tuple[str, ...]
    """The spec's keys of its corpora (data.general.valid, data.non_english.valid)."""
    tokens: tuple[int, ...]
    """Each document's tokens, over its corpora."""
    weights: tuple[float, ...]
    """Each document's weight in the side's figure (train_entry.text_losses.SideLosses.weights)."""


def check_texts(sides: list[TextSide], *, draws: int, chunked: bool) -> None:
    """Refuses (CorpusError) a text side with fewer than MIN_DOCUMENTS documents, naming it, the figure and what would
    give more; warns (stderr) of one whose documents weigh as fewer (a long one among short ones)."""
    short = [side for side in sides if len(side.tokens) < MIN_DOCUMENTS]
    chunks = (
        ""
        if chunked
        else (
            "; or, only if the parts of its documents are independent of each other (unrelated records in one "
            "document), cut them into chunks that count as documents (data.<side>.independent_chunks: TOKENS)"
        )
    )
    if short:
        found = "; ".join(f"{side.name} holds {len(side.tokens)} ({' + '.join(side.corpora)})" for side in short)
        raise CorpusError(
            f"too few validation documents for a text error: {found}, and every text needs at least {MIN_DOCUMENTS} "
            f"per side (the pool, and {draws} confirmation draw(s), get {POOL_SHARE:.0%} and the rest of the "
            f"documents in turn): add held-out documents, or confirm fewer candidates "
            f"(search.confirmation.candidates){chunks}"
        )
    for side in sides:
        effective = effective_documents(list(side.weights))
        if effective < MIN_DOCUMENTS:
            print(
                f"warning: {side.name} holds {len(side.tokens)} documents but their lengths weigh as "
                f"{effective:.1f} equal ones (its longest is {max(side.tokens):,} of {sum(side.tokens):,} tokens): its "
                f"figures rest mostly on a few documents, and their text error is wide: add held-out documents of "
                f"the kind to {' + '.join(side.corpora)}{chunks}",
                file=sys.stderr,
            )
