"""Plain text: documents separated by one or more blank lines; what a shard is when its name declares no other
format."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from train_entry.data.corpus_formats.lines import LineFormat
from train_entry.data.documents import DocumentParser, Line


class PlainText(LineFormat):
    name = "text"
    label = "plain text"
    suffixes = frozenset({".txt"})
    spans_lines = True

    def documents(self, lines: Iterable[Line], parser: DocumentParser) -> Iterator[str]:
        parts: list[bytes] = []
        size = 0
        limit = parser.max_document_bytes
        for line in _with_end(lines):
            if line is not None and not line.strip():
                text = _document(parts, size, parser) if size else None
                if text is not None:
                    yield text
                parts, size = [], 0
            elif line is None or size + len(line) > limit:
                # Keep nothing of an oversized document; its size stays over the limit to its end.
                parts, size = [], limit + 1
            else:
                parts.append(line)
                size += len(line) + 1

    def expected(self, text_field: str) -> str:
        return 'plain text with blank lines between documents (or a .jsonl file with a "text" field per line)'


def _document(parts: list[bytes], size: int, parser: DocumentParser) -> str | None:
    """A document is judged as a whole: one bad line would leave a hole in the text."""
    if size > parser.max_document_bytes:
        parser.stats.skipped_oversized += 1
        return None
    try:
        text = b"\n".join(parts).decode("utf-8")
    except UnicodeDecodeError:
        parser.stats.skipped_non_utf8 += 1
        return None
    return parser.count(text)


def _with_end(lines: Iterable[Line]) -> Iterator[Line]:
    """The lines and one blank line more, so that the last plain-text document is closed too."""
    yield from lines
    yield b""
