"""Samples of a corpus: strata that read every document exactly once between them, in an order that spreads any
prefix over the whole corpus, for plain, compressed and Parquet files alike."""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
import string
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from train_entry.data.corpus import Corpus, CorpusStats
from train_entry.data.corpus_formats import declared_format
from train_entry.data.documents import DocumentParser
from train_entry.data.sample import CorpusSample, read_documents, spread_order
from train_entry.data.shards import Spill, TextShard

LINES = st.lists(
    st.sampled_from(
        ["", "  ", " \r", "\t", "a", "bb b", "ccc cc", "x" * 70, "ü é", "bad \udcff byte", '{"text": "j"}']
    ),
    max_size=14,
)


def shard_documents(path: Path, stratum_bytes: int) -> tuple[list[str], CorpusStats]:
    """Every stratum of one file read on its own, in order, with a 60-byte document limit."""
    fmt = declared_format(path)
    stats = CorpusStats()
    parser = DocumentParser(fmt.format, text_field="text", max_document_bytes=60, stats=stats)
    shard = fmt.format.open(path, fmt.codec, stratum_bytes=stratum_bytes, parser=parser)
    if isinstance(shard, TextShard):
        documents = [document for k in range(shard.strata) for document in shard.read(k)]
        shard.release()
        return documents, stats
    spill = Spill()
    shard.extract(set(range(shard.strata)), spill.add)
    documents = [document for k in range(shard.strata) for document in shard.documents(spill.lines(k))]
    spill.close()
    return documents, stats


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=LINES, bom=st.booleans(), stratum_bytes=st.integers(1, 40), suffix=st.sampled_from([".txt", ".jsonl"]))
def test_strata_read_every_document_once_whatever_their_size(tmp_path, lines, bom, stratum_bytes, suffix) -> None:
    data = ("\ufeff" if bom else "") + "\n".join(lines)
    path = tmp_path / f"corpus{suffix}"
    path.write_bytes(data.encode("utf-8", "surrogateescape"))
    if not data:
        return

    whole = shard_documents(path, stratum_bytes=1 << 30)  # one stratum: the file front to back

    assert shard_documents(path, stratum_bytes) == whole
    compressed = path.with_name(path.name + ".gz")
    compressed.write_bytes(gzip.compress(path.read_bytes()))
    assert shard_documents(compressed, stratum_bytes) == whole


def test_spread_order_visits_each_stratum_once_and_spreads_every_prefix() -> None:
    order = list(spread_order(1000))

    assert sorted(order) == list(range(1000))
    assert order[:4] == [0, 512, 256, 768]
    for size in (8, 64, 256):
        gaps = [b - a for a, b in zip(sorted(order[:size]), sorted(order[:size])[1:])]
        assert max(gaps) <= 2 * 1000 / size  # no region of the corpus is left out


def numbered_jsonl(path: Path, documents: int, *, seed: int = 0) -> Path:
    """Documents "<k> <random words>" of varied length: the number says where a sampled document came from.

    Random words compress about 2:1, so a compressed copy still has a few dozen 64 KiB strata.
    """
    rng = random.Random(seed)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))) for _ in range(5_000)]
    with path.open("w") as out:
        for k in range(documents):
            out.write(json.dumps({"text": f"{k} " + " ".join(rng.choices(words, k=rng.randint(5, 60)))}) + "\n")
    return path


def sampled_numbers(corpus: Corpus, max_bytes: int) -> list[int]:
    with CorpusSample(corpus, expected_bytes=max_bytes, max_document_bytes=10_000) as sample:
        return [int(document.split()[0]) for _, document in sample.spread(max_bytes)]


@pytest.mark.parametrize("codec", ["none", "gzip", "zstd"])
def test_a_sample_is_spread_over_the_whole_file_not_its_start(tmp_path: Path, codec: str) -> None:
    plain = numbered_jsonl(tmp_path / "corpus.jsonl", 20_000)
    path = {
        "none": plain,
        "gzip": tmp_path / "corpus.jsonl.gz",
        "zstd": tmp_path / "corpus.jsonl.zst",
    }[codec]
    if codec == "gzip":
        path.write_bytes(gzip.compress(plain.read_bytes()))
    elif codec == "zstd":
        path.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    size = path.stat().st_size

    numbers = sampled_numbers(Corpus.of(path), size // 4)

    assert 0 < len(numbers) < 20_000 // 2
    # Documents from every fifth of the corpus (a stream's strata are placed to within a compressed block).
    assert {number * 5 // 20_000 for number in numbers} == set(range(5))
    assert max(numbers) > 0.8 * 20_000
    assert numbers == sampled_numbers(Corpus.of(path), size // 4)  # the same sample every time


def test_a_parquet_sample_draws_from_every_row_group(tmp_path: Path) -> None:
    texts = [f"{k} " + "tent pole " * (k % 13) for k in range(80_000)]
    path = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"text": texts}), path, row_group_size=10_000, compression="none")

    numbers = sampled_numbers(Corpus.of(path), path.stat().st_size // 4)

    assert 0 < len(numbers) < 80_000 // 2
    assert {number // 10_000 for number in numbers} == set(range(8))


def test_reading_a_corpus_no_larger_than_asked_is_reading_it_whole_in_order(tmp_path: Path) -> None:
    path = numbered_jsonl(tmp_path / "corpus.jsonl", 3_000)
    corpus = Corpus.of(path)

    every = list(read_documents(corpus, max_bytes=None, max_document_bytes=10_000))
    assert list(read_documents(corpus, max_bytes=path.stat().st_size, max_document_bytes=10_000)) == every
    assert [int(text.split()[0]) for text in every] == list(range(3_000))
    with CorpusSample(corpus, expected_bytes=1, max_document_bytes=10_000) as sample:
        spread = sorted(sample.spread(), key=lambda drawn: drawn[0])
        assert [text for _, text in spread] == every  # all strata, each once, sorted back into file order
        assert dataclasses.astuple(sample.stats)[-2:] == (path.stat().st_size, path.stat().st_size)
