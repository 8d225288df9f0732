"""Reading a corpus file into documents, counting every line it has to skip and why.

A real corpus has a few broken lines; they are skipped and counted, not fatal. A file with no
usable document at all is an input error (CorpusError), reported with what was found in it.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import json
import lzma
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

DEFAULT_MAX_DOCUMENT_BYTES = 1_000_000
"""Longer documents are skipped: one such line is more likely a dump than prose."""

_SKIP_CHUNK = 1 << 20
"""Bytes read at a time while passing over the rest of an oversized line."""

_DECOMPRESSORS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
"""Compressed corpora are read as they are (`train.jsonl.gz` is JSONL)."""
_UNSUPPORTED_COMPRESSION = {".zst": "zstd -d", ".zstd": "zstd -d", ".lz4": "lz4 -d", ".br": "brotli -d"}


class CorpusError(ValueError):
    """Input data the pipeline cannot use (a corpus file, a tokenizer directory); names the file."""


@dataclass
class CorpusStats:
    """What reading (and later tokenising) one corpus file found."""

    documents: int = 0
    characters: int = 0
    lines: int = 0
    skipped_non_utf8: int = 0
    """Lines (JSONL) or documents (plain text) that are not valid UTF-8."""
    skipped_malformed: int = 0
    """JSONL lines that are not a JSON object with a string "text"."""
    skipped_empty: int = 0
    """Documents with no text but whitespace."""
    skipped_oversized: int = 0
    """Documents over max_document_bytes (JSONL: the line's bytes)."""
    tokens: int = 0
    """Tokens written to the indexed dataset, one end-of-document token per document included."""


@dataclass(frozen=True)
class CorpusFile:
    """A corpus file and the JSONL field that holds each document's text (plain text has none)."""

    path: Path
    text_field: str = "text"


class CorpusReader:
    """The documents of one corpus file; `stats` counts them once iterated.

    `.jsonl` files hold one JSON object per line, its text in `text_field`; any other file is plain
    text with documents separated by one or more blank lines. Either may be compressed (.gz,
    .bz2, .xz). Iterating a file with no usable
    document raises CorpusError at the end, so every consumer fails the same way.
    """

    def __init__(
        self, path: Path, *, max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES, text_field: str = "text"
    ) -> None:
        if max_document_bytes <= 0:
            raise ValueError(f"max_document_bytes must be positive, got {max_document_bytes=}")
        self.path = path
        self.max_document_bytes = max_document_bytes
        self.text_field = text_field
        self.stats = CorpusStats()
        self._first_keys: list[str] | None = None
        """The first JSONL object's keys: named in the error when none has the text field."""

    @property
    def is_jsonl(self) -> bool:
        suffixes = self.path.suffixes
        if suffixes and suffixes[-1] in _DECOMPRESSORS:
            suffixes = suffixes[:-1]
        return bool(suffixes) and suffixes[-1] == ".jsonl"

    def __iter__(self) -> Iterator[str]:
        self.stats = CorpusStats()
        self._first_keys = None
        with self._open() as stream:
            lines = _lines(stream, self.max_document_bytes, self.stats)
            yield from self._jsonl(lines) if self.is_jsonl else self._plain(lines)
        if self.stats.documents == 0:
            raise CorpusError(self._nothing_usable())

    def _jsonl(self, lines: Iterator[bytes | None]) -> Iterator[str]:
        for line in lines:
            if line is None:
                self.stats.skipped_oversized += 1
                continue
            try:
                record = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError:
                self.stats.skipped_non_utf8 += 1
                continue
            except json.JSONDecodeError:
                record = None
            text = record.get(self.text_field) if isinstance(record, dict) else None
            if isinstance(record, dict) and self._first_keys is None:
                self._first_keys = sorted(record)
            if not isinstance(text, str):
                if line.strip():
                    self.stats.skipped_malformed += 1
                else:
                    self.stats.skipped_empty += 1
                continue
            if _has_lone_surrogate(text):
                # Valid JSON ("\ud800") but no UTF-8 encoding: the tokenizer would fail on it.
                self.stats.skipped_non_utf8 += 1
                continue
            if not text.strip():
                self.stats.skipped_empty += 1
                continue
            yield self._count(text)

    def _open(self) -> BinaryIO:
        suffix = self.path.suffix
        if suffix in _UNSUPPORTED_COMPRESSION:
            raise CorpusError(
                f"{self.path}: {suffix} compression is not read here; decompress it first "
                f"({_UNSUPPORTED_COMPRESSION[suffix]} {self.path.name}) or use .gz, .bz2 or .xz"
            )
        if suffix in _DECOMPRESSORS:
            return cast(BinaryIO, _DECOMPRESSORS[suffix](self.path, "rb"))
        return self.path.open("rb")

    def _plain(self, lines: Iterator[bytes | None]) -> Iterator[str]:
        parts: list[bytes] = []
        size = 0
        for line in _with_end(lines):
            if line is not None and not line.strip():
                text = self._plain_document(parts, size) if size else None
                if text is not None:
                    yield text
                parts, size = [], 0
            elif line is None or size + len(line) > self.max_document_bytes:
                # Keep nothing of an oversized document; its size stays over the limit to its end.
                parts, size = [], self.max_document_bytes + 1
            else:
                parts.append(line)
                size += len(line) + 1

    def _plain_document(self, parts: list[bytes], size: int) -> str | None:
        """A document is judged as a whole: one bad line would leave a hole in the text."""
        if size > self.max_document_bytes:
            self.stats.skipped_oversized += 1
            return None
        try:
            text = b"\n".join(parts).decode("utf-8")
        except UnicodeDecodeError:
            self.stats.skipped_non_utf8 += 1
            return None
        return self._count(text)

    def _count(self, text: str) -> str:
        self.stats.documents += 1
        self.stats.characters += len(text)
        return text

    def _nothing_usable(self) -> str:
        s = self.stats
        found = [
            f"{count} {what}"
            for count, what in (
                (s.skipped_non_utf8, "not UTF-8"),
                (s.skipped_malformed, f'malformed JSON or without a string "{self.text_field}"'),
                (s.skipped_empty, "empty"),
                (s.skipped_oversized, f"over max_document_bytes={self.max_document_bytes}"),
            )
            if count
        ]
        detail = f"{s.lines} lines" + (": " + ", ".join(found) if found else "")
        if self._first_keys is not None and self.text_field not in self._first_keys:
            detail += f"; the first object's keys: {', '.join(self._first_keys) or 'none'}"
        expected = (
            f'JSONL with a "{self.text_field}" string field per line (the corpus\'s text_field in the spec)'
            if self.is_jsonl
            else 'plain text with blank lines between documents (or a .jsonl file with a "text" field per line)'
        )
        return f"{self.path}: no usable documents ({detail}); expected {expected}"


def _lines(stream: BinaryIO, limit: int, stats: CorpusStats) -> Iterator[bytes | None]:
    """Lines without their line break; None for a line over `limit` bytes, never held whole in memory."""
    if stream.read(len(codecs.BOM_UTF8)) != codecs.BOM_UTF8:  # a byte-order mark is not text
        stream.seek(0)
    while line := stream.readline(limit + 1):
        stats.lines += 1
        if len(line) > limit and not line.endswith(b"\n"):
            while (rest := stream.readline(_SKIP_CHUNK)) and not rest.endswith(b"\n"):
                pass
            yield None
        else:
            yield line.rstrip(b"\r\n")


def _with_end(lines: Iterator[bytes | None]) -> Iterator[bytes | None]:
    """The lines and one blank line more, so that the last plain-text document is closed too."""
    yield from lines
    yield b""


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
