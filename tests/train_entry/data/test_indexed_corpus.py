"""Corpora tokenised into megatron-core indexed datasets: exact round trip, cached by content."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from megatron.core.datasets.indexed_dataset import IndexedDataset

from train_entry.data.corpus import CorpusFile
from train_entry.data.corpus import CorpusError, CorpusStats
from train_entry.data.indexed import build_indexed
from train_entry.data.tokenizer import load_tokenizer

TEXTS = [
    "A first document.\n\nWith a paragraph break.",
    "Ünïcödé, 中文 and emoji 🚀 round-trip through bytes.",
    "A literal <|endoftext|> inside a document is text, not a document end.",
    "  leading and trailing whitespace is kept  ",
]


def test_documents_round_trip_through_the_indexed_dataset(tmp_path: Path, tokenizer_dir: Path, write_jsonl) -> None:
    corpus = write_jsonl(tmp_path / "round_trip.jsonl", TEXTS)
    tokenizer = load_tokenizer(tokenizer_dir)
    eod = tokenizer.eos_token_id

    indexed = build_indexed(CorpusFile(corpus), tokenizer_dir, tmp_path / "cache")
    dataset = IndexedDataset(indexed.prefix)

    assert len(dataset) == len(TEXTS)
    for text, document in zip(TEXTS, (dataset[i] for i in range(len(dataset)))):
        assert document[-1] == eod
        assert eod not in document[:-1]
        assert tokenizer.decode(document[:-1].tolist()) == text
    total = int(dataset.sequence_lengths.sum())
    assert indexed.stats.tokens == total
    assert indexed.stats.documents == len(TEXTS)
    assert os.path.getsize(indexed.prefix + ".bin") == 2 * total  # uint16: the vocabulary fits


def test_a_second_build_reuses_the_entry_and_a_changed_corpus_gets_a_new_one(
    tmp_path: Path, tokenizer_dir: Path, write_jsonl
) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", TEXTS)
    cache = tmp_path / "cache"
    first = build_indexed(CorpusFile(corpus), tokenizer_dir, cache)
    written = os.stat(first.prefix + ".bin").st_mtime_ns

    again = build_indexed(CorpusFile(corpus), tokenizer_dir, cache)

    assert again == first
    assert os.stat(again.prefix + ".bin").st_mtime_ns == written
    write_jsonl(corpus, TEXTS + ["one more document"])
    changed = build_indexed(CorpusFile(corpus), tokenizer_dir, cache)
    assert changed.prefix != first.prefix
    assert changed.stats.documents == len(TEXTS) + 1
    assert build_indexed(CorpusFile(corpus), tokenizer_dir, cache, max_document_bytes=50).prefix != changed.prefix
    assert IndexedDataset.exists(first.prefix)


def test_bad_lines_are_counted_and_the_counts_are_cached(tmp_path: Path, tokenizer_dir: Path) -> None:
    corpus = tmp_path / "bad.jsonl"
    corpus.write_bytes(
        b"".join(
            [
                json.dumps({"text": "good one"}).encode() + b"\n",
                b'{"text": "\xe9t\xe9"}\n',
                b"{broken\n",
                json.dumps({"title": "no text"}).encode() + b"\n",
                json.dumps({"text": ""}).encode() + b"\n",
                json.dumps({"text": "w" * 500}).encode() + b"\n",
                json.dumps({"text": "good two"}).encode() + b"\n",
            ]
        )
    )
    expected = CorpusStats(
        documents=2,
        characters=16,
        lines=7,
        skipped_non_utf8=1,
        skipped_malformed=2,
        skipped_empty=1,
        skipped_oversized=1,
    )

    built = build_indexed(CorpusFile(corpus), tokenizer_dir, tmp_path / "cache", max_document_bytes=200)
    reused = build_indexed(CorpusFile(corpus), tokenizer_dir, tmp_path / "cache", max_document_bytes=200)

    dataset = IndexedDataset(built.prefix)
    assert len(dataset) == 2
    assert built.stats == dataclasses.replace(expected, tokens=int(dataset.sequence_lengths.sum()))
    assert reused.stats == built.stats


def test_a_corpus_with_nothing_usable_raises_and_leaves_no_cache_entry(tmp_path: Path, tokenizer_dir: Path) -> None:
    corpus = tmp_path / "unusable.jsonl"
    corpus.write_bytes(b'{"text": "\xff"}\n{"no": "text"}\n\n')
    cache = tmp_path / "cache"

    with pytest.raises(CorpusError) as raised:
        build_indexed(CorpusFile(corpus), tokenizer_dir, cache)

    assert str(corpus) in str(raised.value)
    assert "3 lines: 1 not UTF-8, 1 malformed JSON" in str(raised.value)
    assert list(cache.iterdir()) == []
