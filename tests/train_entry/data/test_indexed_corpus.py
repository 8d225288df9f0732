"""Corpora tokenised into megatron-core indexed datasets: exact round trip, a bounded sample spread over the corpus
and written in its order, cached by the corpus's fingerprint."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from megatron.core.datasets.indexed_dataset import IndexedDataset

from train_entry.data.corpus import Corpus, CorpusError, CorpusStats, SampleProgress
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

    indexed = build_indexed(Corpus.of(corpus), tokenizer_dir, tmp_path / "cache")
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
    first = build_indexed(Corpus.of(corpus), tokenizer_dir, cache)
    written = os.stat(first.prefix + ".bin").st_mtime_ns

    again = build_indexed(Corpus.of(corpus), tokenizer_dir, cache)

    assert again == first
    assert os.stat(again.prefix + ".bin").st_mtime_ns == written
    write_jsonl(corpus, TEXTS + ["one more document"])
    changed = build_indexed(Corpus.of(corpus), tokenizer_dir, cache)
    assert changed.prefix != first.prefix
    assert changed.stats.documents == len(TEXTS) + 1
    assert build_indexed(Corpus.of(corpus), tokenizer_dir, cache, max_document_bytes=50).prefix != changed.prefix
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
        corpus_bytes=corpus.stat().st_size,
        sampled_bytes=corpus.stat().st_size,
    )

    built = build_indexed(Corpus.of(corpus), tokenizer_dir, tmp_path / "cache", max_document_bytes=200)
    reused = build_indexed(Corpus.of(corpus), tokenizer_dir, tmp_path / "cache", max_document_bytes=200)

    dataset = IndexedDataset(built.prefix)
    assert len(dataset) == 2
    assert built.stats == dataclasses.replace(expected, tokens=int(dataset.sequence_lengths.sum()))
    assert reused.stats == built.stats


def test_a_corpus_with_nothing_usable_raises_and_leaves_no_cache_entry(tmp_path: Path, tokenizer_dir: Path) -> None:
    corpus = tmp_path / "unusable.jsonl"
    corpus.write_bytes(b'{"text": "\xff"}\n{"no": "text"}\n\n')
    cache = tmp_path / "cache"

    with pytest.raises(CorpusError) as raised:
        build_indexed(Corpus.of(corpus), tokenizer_dir, cache)

    assert str(corpus) in str(raised.value)
    assert "3 lines: 1 not UTF-8, 1 malformed JSON" in str(raised.value)
    assert list(cache.iterdir()) == []


def numbered(path: Path, documents: int) -> Path:
    """JSONL documents "<k> <words>": the number says where a sampled document came from."""
    words = ["price", "cotton", "shipping", "review", "size", "colour", "warranty", "return", "lamp", "oak"]
    lines = (
        json.dumps({"text": f"{k} " + " ".join(words[(k * j) % 10] for j in range(k % 40))}) for k in range(documents)
    )
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_a_sample_holds_the_tokens_asked_for_from_across_the_corpus_in_its_order(
    tmp_path: Path, tokenizer_dir: Path
) -> None:
    corpus = numbered(tmp_path / "listings.jsonl", 60_000)
    tokenizer = load_tokenizer(tokenizer_dir)
    shown: list[SampleProgress] = []

    sample = build_indexed(
        Corpus.of(corpus), tokenizer_dir, tmp_path / "cache", max_tokens=100_000, on_progress=shown.append
    )

    dataset = IndexedDataset(sample.prefix)
    numbers = [int(tokenizer.decode(dataset[i][:-1].tolist()).split()[0]) for i in range(len(dataset))]
    assert numbers == sorted(numbers)  # written in the corpus's order
    assert numbers[0] < 60_000 * 0.05 and numbers[-1] > 60_000 * 0.9  # from its start to its end
    assert 100_000 <= sample.stats.tokens < 100_000 + 2_000  # no more than the last document past the target
    assert sample.stats.tokens == int(dataset.sequence_lengths.sum())
    assert sample.stats.documents == len(dataset) < 60_000 // 4
    assert 0 < sample.stats.share < 0.5
    assert shown and shown[-1].tokens == sample.stats.tokens and shown[-1].fraction == 1.0
    again = build_indexed(Corpus.of(corpus), tokenizer_dir, tmp_path / "cache", max_tokens=100_000)
    assert again == sample


def test_a_corpus_smaller_than_its_sample_is_read_whole_into_the_same_dataset(tmp_path, tokenizer_dir) -> None:
    corpus = numbered(tmp_path / "small.jsonl", 2_000)

    whole = build_indexed(Corpus.of(corpus), tokenizer_dir, tmp_path / "cache")
    sampled = build_indexed(Corpus.of(corpus), tokenizer_dir, tmp_path / "cache", max_tokens=10**9)

    assert sampled.prefix != whole.prefix
    for suffix in (".bin", ".idx"):
        assert Path(sampled.prefix + suffix).read_bytes() == Path(whole.prefix + suffix).read_bytes()
    assert sampled.stats == whole.stats and whole.stats.share == 1.0


def test_a_changed_file_is_seen_without_reading_it_whole(tmp_path: Path, tokenizer_dir: Path) -> None:
    corpus = numbered(tmp_path / "corpus.jsonl", 3_000)
    cache = tmp_path / "cache"
    first = build_indexed(Corpus.of(corpus), tokenizer_dir, cache, max_tokens=5_000)

    stat = corpus.stat()
    os.utime(corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000))  # touched: the same bytes, another mtime
    touched = build_indexed(Corpus.of(corpus), tokenizer_dir, cache, max_tokens=5_000)
    content = bytearray(corpus.read_bytes())
    content[len(content) // 2] ^= 1  # one bit, in the block hashed at the middle; size and mtime restored
    corpus.write_bytes(bytes(content))
    os.utime(corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000))
    flipped = build_indexed(Corpus.of(corpus), tokenizer_dir, cache, max_tokens=5_000)

    assert len({first.prefix, touched.prefix, flipped.prefix}) == 3


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "Expecting property name"),
        ('{"documents": -3}', "documents is -3, not a whole number >= 0"),
        ('{"documents": "many"}', "documents is 'many', not a whole number >= 0"),
        ('{"documents": 3, "planted": 1}', "not an object of the counts"),
        ("[]", "not an object of the counts"),
    ],
    ids=["not JSON", "negative", "wrong type", "unknown key", "a list"],
)
def test_a_damaged_cache_entry_is_a_corpus_error_naming_it(content, problem, tmp_path, tokenizer_dir, write_jsonl):
    """It was a TypeError or a JSONDecodeError from CorpusStats(**json.loads(...)), a traceback in every trial."""
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [f"document {k}" for k in range(20)])
    entry = Path(build_indexed(Corpus.of(corpus), tokenizer_dir, tmp_path / "cache").prefix).parent
    (entry / "stats.json").write_text(content)

    with pytest.raises(CorpusError) as raised:
        build_indexed(Corpus.of(corpus), tokenizer_dir, tmp_path / "cache")

    message = str(raised.value)
    assert message.startswith(f"{entry / 'stats.json'}: a damaged cache entry (") and problem in message
    assert message.endswith(f"remove {entry} and the next run builds it again")
