"""JSON lines: one object per line, the document's text in its `text_field` (Dolma's and RedPajama's .json.gz too)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from train_entry.data.corpus_formats.lines import LineFormat
from train_entry.data.documents import DocumentParser, Line


class JsonLines(LineFormat):
    name = "jsonl"
    label = "JSONL"
    suffixes = frozenset({".jsonl", ".json", ".ndjson"})
    """Dolma and RedPajama name their JSON-lines shards .json.gz; a .json file is read as JSON lines too."""
    spans_lines = False

    def documents(self, lines: Iterable[Line], parser: DocumentParser) -> Iterator[str]:
        stats = parser.stats
        for line in lines:
            if line is None:
                stats.skipped_oversized += 1
                continue
            text = _json_text(line, parser)
            if text is None:
                continue
            if _has_lone_surrogate(text):
                # Valid JSON ("\ud800") but no UTF-8 encoding: the tokenizer would fail on it.
                stats.skipped_non_utf8 += 1
            elif not text.strip():
                stats.skipped_empty += 1
            else:
                yield parser.count(text)

    def expected(self, text_field: str) -> str:
        return f'JSONL with a "{text_field}" string field per line (the corpus\'s text_field in the spec)'


def _json_text(line: bytes, parser: DocumentParser) -> str | None:
    """The line's text field, or None with the reason counted."""
    try:
        record = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        parser.stats.skipped_non_utf8 += 1
        return None
    except (json.JSONDecodeError, RecursionError):  # RecursionError: nested deeper than the parser recurses
        record = None
    if isinstance(record, dict) and parser.first_keys is None:
        parser.first_keys = sorted(record)
    text = record.get(parser.text_field) if isinstance(record, dict) else None
    if isinstance(text, str):
        return text
    if line.strip():
        parser.stats.skipped_malformed += 1
    else:
        parser.stats.skipped_empty += 1
    return None


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
