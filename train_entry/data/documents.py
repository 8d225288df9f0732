"""Documents out of a stratum's lines (JSONL, plain text) or cells (Parquet), counting every one skipped and why."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from train_entry.data.corpus import CorpusStats
from train_entry.data.formats import Layout

Line = bytes | None
"""A line without its line break, or None for a line over max_document_bytes (never held whole)."""


class DocumentParser:
    """Turns lines or cells into documents, counting what it skips in `stats`.

    JSONL holds one JSON object per line, its text in `text_field`; plain text separates documents by one or
    more blank lines; Parquet holds one document per row, in the column `text_field`.
    """

    def __init__(self, layout: Layout, *, text_field: str, max_document_bytes: int, stats: CorpusStats) -> None:
        if max_document_bytes <= 0:
            raise ValueError(f"max_document_bytes must be positive, got {max_document_bytes=}")
        self.layout = layout
        self.text_field = text_field
        self.max_document_bytes = max_document_bytes
        self.stats = stats
        self.first_keys: list[str] | None = None
        """The first JSONL object's keys: named in the error when none has the text field."""

    def lines(self, lines: Iterable[Line]) -> Iterator[str]:
        """The documents of one stratum's lines: whole documents, a plain-text one closed by the last line."""
        counted = self._counted(lines)
        return self._plain(counted) if self.layout is Layout.TEXT else self._jsonl(counted)

    def _counted(self, lines: Iterable[Line]) -> Iterator[Line]:
        for line in lines:
            self.stats.lines += 1
            yield line

    def cells(self, cells: Iterable[object]) -> Iterator[str]:
        for cell in cells:
            self.stats.lines += 1
            if cell is None:
                self.stats.skipped_empty += 1
            elif not isinstance(cell, str):
                self.stats.skipped_malformed += 1
            elif len(cell.encode("utf-8", "surrogatepass")) > self.max_document_bytes:
                self.stats.skipped_oversized += 1
            elif cell.strip():
                yield self._count(cell)
            else:
                self.stats.skipped_empty += 1

    def _jsonl(self, lines: Iterable[Line]) -> Iterator[str]:
        for line in lines:
            if line is None:
                self.stats.skipped_oversized += 1
                continue
            text = self._json_text(line)
            if text is None:
                continue
            if _has_lone_surrogate(text):
                # Valid JSON ("\ud800") but no UTF-8 encoding: the tokenizer would fail on it.
                self.stats.skipped_non_utf8 += 1
            elif not text.strip():
                self.stats.skipped_empty += 1
            else:
                yield self._count(text)

    def _json_text(self, line: bytes) -> str | None:
        """The line's text field, or None with the reason counted."""
        try:
            record = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError:
            self.stats.skipped_non_utf8 += 1
            return None
        except (json.JSONDecodeError, RecursionError):  # RecursionError: nested deeper than the parser recurses
            record = None
        if isinstance(record, dict) and self.first_keys is None:
            self.first_keys = sorted(record)
        text = record.get(self.text_field) if isinstance(record, dict) else None
        if isinstance(text, str):
            return text
        if line.strip():
            self.stats.skipped_malformed += 1
        else:
            self.stats.skipped_empty += 1
        return None

    def _plain(self, lines: Iterable[Line]) -> Iterator[str]:
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
        unit = "rows" if self.layout is Layout.PARQUET else "lines"
        detail = f"{s.lines} {unit}" + (": " + ", ".join(found) if found else "")
        if self.first_keys is not None and self.text_field not in self.first_keys:
            detail += f"; the first object's keys: {', '.join(self.first_keys) or 'none'}"
        expected = {
            Layout.JSONL: f'JSONL with a "{self.text_field}" string field per line (the corpus\'s text_field in the spec)',
            Layout.TEXT: 'plain text with blank lines between documents (or a .jsonl file with a "text" field per line)',
            Layout.PARQUET: f'Parquet with a string column "{self.text_field}" (the corpus\'s text_field in the spec)',
        }[self.layout]
        return f"{label}: no usable documents ({detail}); expected {expected}"


def _with_end(lines: Iterable[Line]) -> Iterator[Line]:
    """The lines and one blank line more, so that the last plain-text document is closed too."""
    yield from lines
    yield b""


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
