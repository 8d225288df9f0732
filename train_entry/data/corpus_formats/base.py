"""The interface every corpus format implements: a format is one module of this package, registered in its
__init__, and nothing outside it asks which format a shard is."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar, Protocol

from train_entry.data.documents import DocumentParser
from train_entry.data.shard_bytes import Codec


class Shard(Protocol):
    """One open shard, cut into strata of about equal stored bytes (train_entry.data.shards says how)."""

    path: Path
    size: int
    """Stored bytes, as the sample counts them (Parquet: its row groups')."""
    strata: int
    parser: DocumentParser

    def span(self, k: int) -> int:
        """Stored bytes of stratum k."""
        ...

    def release(self) -> None:
        """Closes what the shard holds open; the next read opens it again."""
        ...


class SeekableShard(Shard, Protocol):
    def read(self, k: int) -> Iterator[str]:
        """The documents that start in stratum k."""
        ...


class CorpusFormat(ABC):
    """How one format's shards are named, checked, cut into strata and parsed into documents."""

    name: ClassVar[str]
    """The key a spec names it by (a corpus's `format`)."""
    label: ClassVar[str]
    """The format in a message ("JSONL")."""
    suffixes: ClassVar[frozenset[str]]
    """Lowercase name suffixes (before any compression suffix) that declare it."""
    unit: ClassVar[str] = "lines"
    """What one record of it is called in a message: a JSONL line, a Parquet row."""
    compressible: ClassVar[bool] = True
    """Whether a .gz/.bz2/.xz/.zst stream of it is read (Parquet compresses its own columns)."""

    @abstractmethod
    def check(self, path: Path, codec: Codec) -> None:
        """Raises CorpusError when the file's first (or last) bytes contradict this format and `codec`."""

    @abstractmethod
    def open(self, path: Path, codec: Codec, *, stratum_bytes: int, parser: DocumentParser) -> Shard:
        """The shard, cut into strata of about `stratum_bytes` stored bytes, its documents parsed by `parser`."""

    @abstractmethod
    def expected(self, text_field: str) -> str:
        """What a usable shard of this format holds, for the error when none of its documents is usable."""
