"""A corpus's sample tokenised into a megatron-core indexed dataset (a .bin/.idx pair), cached by the corpus's
fingerprint.

The sample is the corpus's documents in spread order (train_entry.data.sample) until it holds the tokens asked
for, written in the corpus's own order: a corpus smaller than its sample is read whole, and its dataset is the
one reading it front to back gives. The proxy and the full run read the same kind of file through the same
megatron-core classes, so a document boundary or an end-of-document token means the same thing at both scales.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from train_entry.data.cache import cached_dir, digest
from train_entry.data.corpus import (
    DEFAULT_MAX_DOCUMENT_BYTES,
    Corpus,
    CorpusError,
    CorpusStats,
    OnProgress,
    SampleProgress,
)
from train_entry.data.fingerprint import corpus_fingerprint
from train_entry.data.sample import CorpusSample
from train_entry.data.tokenizer import load_tokenizer, tokenizer_files

PIPELINE_VERSION = 2
"""Part of the cache key: bump it when what is written changes, so old entries are not reused."""

TOKENS = "tokens"
STATS = "stats.json"

_DOCUMENTS_PER_BATCH = 256
"""Documents per tokenizer call: enough for the Rust tokenizer to use every core, few enough to stream."""
BYTES_PER_TOKEN_GUESS = 4
"""Stored bytes per token assumed before tokenising: sets only the stratum size and a stream's first pass."""


@dataclass(frozen=True)
class IndexedCorpus:
    prefix: str
    """Path prefix of the megatron-core .bin/.idx pair, as GPTDatasetConfig's blend takes it."""
    stats: CorpusStats


def build_indexed(
    corpus: Corpus,
    tokenizer_dir: Path,
    cache_root: Path,
    *,
    max_tokens: int | None = None,
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
    on_progress: OnProgress | None = None,
) -> IndexedCorpus:
    """`corpus`'s sample of at least `max_tokens` tokens (None: the whole corpus) tokenised with the tokenizer in
    `tokenizer_dir`, an end-of-document token after each document.

    Cached under cache_root by the corpus's fingerprint, text field (and format, when named), max_tokens, the tokenizer's files,
    max_document_bytes and the pipeline version; a second call with the same inputs reads the entry back. Raises
    CorpusError (and caches nothing) when the corpus has no usable document.
    """
    named_files = [part for file in tokenizer_files(tokenizer_dir) for part in (file.name, file)]
    key = digest(
        f"indexed-{PIPELINE_VERSION}",
        max_document_bytes,
        corpus_fingerprint(corpus.shards()),
        *corpus.reading_key(),
        "whole" if max_tokens is None else max_tokens,
        *named_files,
    )
    entry = cache_root / f"{_entry_name(corpus.paths[0])}-{key[:20]}"
    build = _Build(corpus, tokenizer_dir, max_tokens, max_document_bytes, on_progress)
    cached_dir(entry, build.write)
    return IndexedCorpus(prefix=str(entry / TOKENS), stats=read_stats(entry))


MAX_STATS_BYTES = 64 << 10
"""stats.json is a dozen counts: far below this."""


def read_stats(entry: Path) -> CorpusStats:
    """A cache entry's stats.json, checked as untrusted (a cache directory may be shared and hand-edited): every
    count a whole number >= 0 under CorpusStats' names; CorpusError naming the file and how to rebuild it."""
    path = entry / STATS
    fields = {field.name for field in dataclasses.fields(CorpusStats)}
    try:
        if path.stat().st_size > MAX_STATS_BYTES:
            raise ValueError(f"more than {MAX_STATS_BYTES:,} bytes")
        data = json.loads(path.read_bytes())
        if not isinstance(data, dict) or set(data) - fields:
            raise ValueError(f"not an object of the counts {', '.join(sorted(fields))}")
        wrong = next((key for key, value in data.items() if type(value) is not int or value < 0), None)
        if wrong is not None:
            raise ValueError(f"{wrong} is {data[wrong]!r}, not a whole number >= 0")
    except (OSError, ValueError) as error:
        raise CorpusError(
            f"{path}: a damaged cache entry ({error}); remove {entry} and the next run builds it again"
        ) from None
    return CorpusStats(**data)


def _entry_name(path: Path) -> str:
    """`<folder>-<file stem>` of the corpus's first path, in characters any file system takes."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", f"{path.parent.name}-{path.name.split('.')[0]}").strip("_") or "corpus"


@dataclass(frozen=True)
class _Build:
    corpus: Corpus
    tokenizer_dir: Path
    max_tokens: int | None
    max_document_bytes: int
    on_progress: OnProgress | None

    def write(self, directory: Path) -> None:
        # Imported here: megatron-core takes seconds to import, and a sweep whose datasets are cached never writes one.
        from megatron.core.datasets.indexed_dataset import DType

        tokenizer = load_tokenizer(self.tokenizer_dir)
        # uint16 while the vocabulary fits, as megatron-core's own preprocessing chooses.
        dtype = DType.optimal_dtype(len(tokenizer))
        if self.max_tokens is None:
            expected = sum(path.stat().st_size for path in self.corpus.shards())
        else:
            expected = self.max_tokens * BYTES_PER_TOKEN_GUESS
        drawn = directory / "drawn.bin"
        with CorpusSample(self.corpus, expected_bytes=expected, max_document_bytes=self.max_document_bytes) as sample:
            documents = sample.in_order() if self.max_tokens is None else sample.spread()
            with drawn.open("wb") as out:
                written = _Drawn()
                for stratum, ids, characters in self._tokenised(documents, sample, tokenizer):
                    out.write(np.asarray(ids, dtype=dtype).tobytes())
                    written.add(stratum, len(ids), characters)
            # Documents parsed in the last tokenizer batch after max_tokens was reached are not written.
            stats = dataclasses.replace(
                sample.stats, documents=len(written.lengths), characters=written.characters, tokens=written.tokens
            )
        written.write_in_corpus_order(drawn, dtype, directory / TOKENS)
        drawn.unlink()
        (directory / STATS).write_text(json.dumps(dataclasses.asdict(stats), indent=2) + "\n")

    def _tokenised(
        self, documents: Iterable[tuple[int, str]], sample: CorpusSample, tokenizer
    ) -> Iterator[tuple[int, list[int], int]]:
        """(stratum, token ids with the end-of-document token, characters) of each document, until max_tokens."""
        eod = tokenizer.eos_token_id
        tokens = 0
        for batch in _batches(documents, _DOCUMENTS_PER_BATCH):
            # split_special_tokens: a literal "<|endoftext|>" in a document is text, not a document end.
            texts = [text for _, text in batch]
            encoded = tokenizer(texts, add_special_tokens=False, split_special_tokens=True, verbose=False)
            for (stratum, text), ids in zip(batch, encoded["input_ids"]):
                ids.append(eod)
                tokens += len(ids)
                yield stratum, ids, len(text)
                if self.max_tokens is not None and tokens >= self.max_tokens:
                    self._report(sample, tokens)
                    return
            self._report(sample, tokens)

    def _report(self, sample: CorpusSample, tokens: int) -> None:
        if self.on_progress is not None:
            stats = sample.stats
            self.on_progress(
                SampleProgress(stats.sampled_bytes, stats.corpus_bytes, stats.documents, tokens, self.max_tokens)
            )


class _Drawn:
    """The documents as drawn (spread order): each one's stratum and length, to write them in corpus order."""

    def __init__(self) -> None:
        self.strata: list[int] = []
        self.lengths: list[int] = []
        self.tokens = 0
        self.characters = 0

    def add(self, stratum: int, length: int, characters: int) -> None:
        self.strata.append(stratum)
        self.lengths.append(length)
        self.tokens += length
        self.characters += characters

    def write_in_corpus_order(self, drawn: Path, dtype: type[np.number], prefix: Path) -> None:
        """The dataset at `prefix`, its documents sorted by stratum (a stratum's own are in corpus order already)."""
        from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder

        builder = IndexedDatasetBuilder(f"{prefix}.bin", dtype=dtype)
        if self.lengths:
            tokens = np.memmap(drawn, dtype=dtype, mode="r")
            starts = np.concatenate(([0], np.cumsum(self.lengths)[:-1]))
            for i in np.argsort(np.asarray(self.strata), kind="stable"):
                builder.add_document(tokens[starts[i] : starts[i] + self.lengths[i]], [self.lengths[i]])
            del tokens
        builder.finalize(f"{prefix}.idx")


def _batches(items: Iterable[tuple[int, str]], size: int) -> Iterator[list[tuple[int, str]]]:
    batch: list[tuple[int, str]] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
