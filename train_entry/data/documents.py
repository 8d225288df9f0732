"""What every corpus format's reader shares: the counts of documents read and skipped, and the error for a corpus
none of whose documents is usable."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from train_entry.data.corpus import CorpusStats

Line = bytes | None
"""A line without its line break, or None for a line over max_document_bytes (never held whole)."""


class Described(Protocol):
    """What the error for an unusable shard says of its format (train_entry.data.corpus_formats.base.CorpusFormat
    is one: the formats build on this module, so it names none of them)."""

    unit: str

    def expected(self, text_field: str) -> str: ...


class DocumentParser:
    """One shard's documents as its format parses them, counting in `stats` what it reads and skips and why."""

    def __init__(self, fmt: Described, *, text_field: str, max_document_bytes: int, stats: CorpusStats) -> None:
        if max_document_bytes <= 0:
            raise ValueError(f"max_document_bytes must be positive, got {max_document_bytes=}")
        self.format = fmt
        self.text_field = text_field
        self.max_document_bytes = max_document_bytes
        self.stats = stats
        self.first_keys: list[str] | None = None
        """The first record's keys (JSONL): named in the error when none has the text field."""

    def counted(self, records: Iterable[Line] | Iterable[object]) -> Iterator:
        """The records (lines, Parquet cells) as they are, each counted in stats.lines."""
        for record in records:
            self.stats.lines += 1
            yield record

    def count(self, text: str) -> str:
        """A usable document, counted."""
        self.stats.documents += 1
        self.stats.characters += len(text)
        return text

    def nothing_usable(self, label: str) -> str:
        """The error for a corpus none of whose documents is usable: what was found, and what was expected."""
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
        detail = f"{s.lines} {self.format.unit}" + (": " + ", ".join(found) if found else "")
        if self.first_keys is not None and self.text_field not in self.first_keys:
            detail += f"; the first object's keys: {', '.join(self.first_keys) or 'none'}"
        return f"{label}: no usable documents ({detail}); expected {self.format.expected(self.text_field)}"
