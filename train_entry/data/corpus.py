"""A corpus as a spec names it (files, directories, globs of shards, or Megatron indexed dataset prefixes) and what
reading it found.

A real corpus has a few broken lines; they are skipped and counted, not fatal. A corpus with no usable document
at all, a path that names nothing, or a file that is not what it says is an input error (CorpusError), reported
with the file and what was found in it.
"""

from __future__ import annotations

import glob
import stat
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from train_entry.data.glob_walk import glob_files

DEFAULT_MAX_DOCUMENT_BYTES = 1_000_000
"""Longer documents are skipped: one such line is more likely a dump than prose."""

MEGATRON_SUFFIXES = (".bin", ".idx")
"""A Megatron indexed dataset is a path prefix with these two files beside it."""


class CorpusError(ValueError):
    """Input data the pipeline cannot use (a corpus file, a tokenizer directory); names the file."""


@dataclass
class CorpusStats:
    """What reading (and later tokenising) a corpus's sample found."""

    documents: int = 0
    characters: int = 0
    lines: int = 0
    """Lines read (JSONL, plain text) or rows (Parquet)."""
    skipped_non_utf8: int = 0
    """Lines (JSONL) or documents (plain text) that are not valid UTF-8."""
    skipped_malformed: int = 0
    """JSONL lines that are not a JSON object with a string "text" (too deeply nested ones too); Parquet cells
    that are not strings."""
    skipped_empty: int = 0
    """Documents with no text but whitespace (or a null Parquet cell)."""
    skipped_oversized: int = 0
    """Documents over max_document_bytes (JSONL: the line's bytes)."""
    tokens: int = 0
    """Tokens written to the indexed dataset, one end-of-document token per document included."""
    corpus_bytes: int = 0
    """Bytes of the whole corpus as stored (compressed ones compressed; Parquet: its row groups)."""
    sampled_bytes: int = 0
    """Of those, the bytes of the strata the sample read: corpus_bytes when it read the corpus whole."""

    @property
    def share(self) -> float:
        """The share of the corpus the sample covers, by stored bytes."""
        return self.sampled_bytes / self.corpus_bytes if self.corpus_bytes else 1.0


@dataclass(frozen=True)
class SampleProgress:
    """How far a sample has got, for a progress bar."""

    sampled_bytes: int
    corpus_bytes: int
    documents: int
    tokens: int
    max_tokens: int | None

    @property
    def fraction(self) -> float:
        """Done when the tokens are reached or the corpus is read whole, whichever comes first."""
        by_bytes = self.sampled_bytes / self.corpus_bytes if self.corpus_bytes else 1.0
        by_tokens = self.tokens / self.max_tokens if self.max_tokens else 0.0
        return min(1.0, max(by_bytes, by_tokens))


OnProgress = Callable[[SampleProgress], None]


@dataclass(frozen=True)
class Corpus:
    """One corpus split as a spec names it: files, directories and globs of shards (read as one corpus), or
    Megatron indexed dataset prefixes; the JSONL key or Parquet column holding each document's text; and the
    format its shards are read as (a name in train_entry.data.corpus_formats.FORMATS), None: each one's name says."""

    paths: tuple[Path, ...]
    text_field: str = "text"
    format: str | None = None

    def __post_init__(self) -> None:
        if not self.paths:
            raise ValueError("a corpus needs at least one path, got none")
        object.__setattr__(self, "paths", tuple(Path(path) for path in self.paths))

    @classmethod
    def of(cls, *paths: str | Path, text_field: str = "text") -> Corpus:
        return cls(tuple(Path(path) for path in paths), text_field)

    @property
    def label(self) -> str:
        """The corpus in a message: its path, or its first path and how many more."""
        more = f" (+{len(self.paths) - 1} more)" if len(self.paths) > 1 else ""
        return f"{self.paths[0]}{more}"

    def reading_key(self) -> tuple[str, ...]:
        """What, beside its files, decides the documents read from it, for cache keys: its text field, and its format
        when one is named (a corpus read by its shards' names keeps the keys, and so the cache entries, it had)."""
        return (self.text_field,) if self.format is None else (self.text_field, f"format={self.format}")

    def prefixes(self) -> list[Path] | None:
        """The Megatron prefixes, when every path is one; None when every path is files; CorpusError for a mix."""
        kinds = {is_megatron_prefix(path) for path in self.paths}
        if kinds == {True, False}:
            raise CorpusError(f"{self.label}: mixes Megatron prefixes and files; give one kind per corpus split")
        if kinds == {True}:
            _once(self.paths, [Path(f"{path}.bin") for path in self.paths])
            return list(self.paths)
        return None

    def shards(self) -> list[Path]:
        """The files the corpus reads, in a stable order: each path's file, its directory's files or its glob's
        matches, sorted. CorpusError when a path names nothing readable, or two name one file."""
        shards = [shard for path in self.paths for shard in _shards(path)]
        if not shards:
            raise CorpusError(f"{self.label}: no corpus file found")
        _once(shards, shards)
        return shards

    def files(self) -> dict[tuple[int, int], Path]:
        """The real files it reads ((device, inode): path), each prefix by its .bin: how two corpora are told to
        share one."""
        prefixes = self.prefixes()
        paths = [Path(f"{prefix}.bin") for prefix in prefixes] if prefixes is not None else self.shards()
        return {_identity(path): path for path in paths}


def _once(named: Sequence[Path], files: Sequence[Path]) -> None:
    """CorpusError when two of `files` (read for `named`) are one file: it would be sampled as if it were several."""
    identities = [_identity(path) for path in files]
    counts = Counter(identities)
    repeated = next((k for k, identity in enumerate(identities) if counts[identity] > 1), None)
    if repeated is not None:
        again = [str(name) for name, identity in zip(named, identities) if identity == identities[repeated]]
        raise CorpusError(
            f"{named[repeated]}: one file listed {len(again)} times in this corpus ({', '.join(again)}); "
            "list each file once, or it is sampled as if it were several"
        )


def _identity(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_dev, info.st_ino


def is_megatron_prefix(path: Path) -> bool:
    """A path that is no file itself but has the .bin and .idx of a Megatron indexed dataset beside it."""
    return not path.exists() and all(Path(f"{path}{suffix}").is_file() for suffix in MEGATRON_SUFFIXES)


def _shards(path: Path) -> list[Path]:
    if glob.has_magic(str(path)):
        files = glob_files(str(path))
        if not files:
            raise CorpusError(f"{path}: no file matches this glob")
        return files
    if path.is_dir():
        files = sorted(child for child in path.iterdir() if child.is_file() and not child.name.startswith("."))
        if not files:
            raise CorpusError(f"{path}: the directory holds no corpus file (hidden files are left out)")
        return files
    if is_megatron_prefix(path):
        raise CorpusError(f"{path}: a Megatron indexed dataset prefix, where the corpus's other paths are files")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise CorpusError(
            f"corpus file not found: {path} (nor a directory, a glob or a Megatron prefix {path}.bin/.idx)"
        ) from None
    if not stat.S_ISREG(mode):
        raise CorpusError(f"{path} is not a regular file (a FIFO, socket or device); name a corpus file")
    if path.stat().st_size == 0:
        raise CorpusError(f"corpus file is empty: {path}")
    return [path]
