"""One corpus file tokenised into a megatron-core indexed dataset (a .bin/.idx pair), cached by content.

The proxy and the full run read the same kind of file through the same megatron-core classes, so
a document boundary or an end-of-document token means the same thing at both scales.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from megatron.core.datasets.indexed_dataset import DType, IndexedDatasetBuilder

from train_entry.data.cache import cached_dir, digest
from train_entry.data.corpus import DEFAULT_MAX_DOCUMENT_BYTES, CorpusFile, CorpusReader, CorpusStats
from train_entry.data.tokenizer import load_tokenizer, tokenizer_files

PIPELINE_VERSION = 1
"""Part of the cache key: bump it when what is written changes, so old entries are not reused."""

_TOKENS = "tokens"
_STATS = "stats.json"

_DOCUMENTS_PER_BATCH = 256
"""Documents per tokenizer call: enough for the Rust tokenizer to use every core, few enough to stream."""


@dataclass(frozen=True)
class IndexedCorpus:
    prefix: str
    """Path prefix of the megatron-core .bin/.idx pair, as GPTDatasetConfig's blend takes it."""
    stats: CorpusStats


def build_indexed(
    corpus: CorpusFile,
    tokenizer_dir: Path,
    cache_root: Path,
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
) -> IndexedCorpus:
    """`corpus` tokenised with the tokenizer in `tokenizer_dir`, an end-of-document token after each document.

    Cached under cache_root by the corpus's bytes and text field, the tokenizer's files,
    max_document_bytes and the pipeline version; a second call with the same inputs reads the entry back. Raises
    CorpusError (and caches nothing) when the corpus has no usable document.
    """
    path = Path(corpus.path)  # a str would be hashed as a name, not as content
    named_files = [part for file in tokenizer_files(tokenizer_dir) for part in (file.name, file)]
    key = digest(f"indexed-{PIPELINE_VERSION}", max_document_bytes, path, corpus.text_field, *named_files)
    entry = cache_root / f"{path.parent.name}-{path.name.split('.')[0]}-{key[:20]}"
    cached_dir(entry, lambda directory: _write(corpus, tokenizer_dir, max_document_bytes, directory))
    stats = CorpusStats(**json.loads((entry / _STATS).read_text()))
    return IndexedCorpus(prefix=str(entry / _TOKENS), stats=stats)


def _write(corpus: CorpusFile, tokenizer_dir: Path, max_document_bytes: int, directory: Path) -> None:
    tokenizer = load_tokenizer(tokenizer_dir)
    eod = tokenizer.eos_token_id
    reader = CorpusReader(corpus.path, max_document_bytes=max_document_bytes, text_field=corpus.text_field)
    # uint16 while the vocabulary fits, as megatron-core's own preprocessing chooses.
    builder = IndexedDatasetBuilder(str(directory / f"{_TOKENS}.bin"), dtype=DType.optimal_dtype(len(tokenizer)))
    tokens = 0
    for texts in _batches(reader, _DOCUMENTS_PER_BATCH):
        # split_special_tokens: a literal "<|endoftext|>" in a document is text, not a document end.
        encoded = tokenizer(texts, add_special_tokens=False, split_special_tokens=True, verbose=False)
        for ids in encoded["input_ids"]:
            ids.append(eod)
            builder.add_document(ids, [len(ids)])
            tokens += len(ids)
    builder.finalize(str(directory / f"{_TOKENS}.idx"))
    stats = dataclasses.replace(reader.stats, tokens=tokens)
    (directory / _STATS).write_text(json.dumps(dataclasses.asdict(stats), indent=2) + "\n")


def _batches(items: Iterable[str], size: int) -> Iterator[list[str]]:
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch
