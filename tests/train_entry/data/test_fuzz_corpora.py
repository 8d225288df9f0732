"""Random bytes and random damage to valid Parquet, zstd and Megatron .idx/.bin files: reading them ends in the
documents, the tokens, or a CorpusError naming the file, never another exception, and writes nothing beside them.

A few seconds each in the default suite; CPT_SWEEP_FUZZ_EXAMPLES (with -m slow) runs the long version.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st
from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder

from tests.fuzzing import LONG, SHORT, damaged
from tests.hostile import tree
from train_entry.data.corpus import Corpus, CorpusError
from train_entry.data.megatron_prefix import sample_prefixes
from train_entry.data.sample import CorpusSample


def parquet_bytes() -> bytes:
    stream = io.BytesIO()
    pq.write_table(pa.table({"text": [f"document {k} " * (1 + k % 7) for k in range(60)]}), stream, row_group_size=16)
    return stream.getvalue()


def zstd_bytes() -> bytes:
    lines = b"".join(b'{"text": "listing %d of the shop"}\n' % k for k in range(200))
    return zstandard.ZstdCompressor(write_checksum=True).compress(lines)


def prefix_files(folder: Path) -> tuple[bytes, bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    builder = IndexedDatasetBuilder(str(folder / "valid.bin"), dtype=np.uint16)
    for k in range(20):
        builder.add_document(np.arange(1 + k % 9, dtype=np.uint16) % 500, [1 + k % 9])
    builder.finalize(str(folder / "valid.idx"))
    return (folder / "valid.idx").read_bytes(), (folder / "valid.bin").read_bytes()


def read_corpus(path: Path) -> None:
    corpus = Corpus.of(path)
    with CorpusSample(corpus, expected_bytes=max(path.stat().st_size, 1), max_document_bytes=10_000) as sample:
        for _ in sample.in_order():
            pass


def fresh(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)


def check_shard(folder: Path, name: str, data: bytes) -> None:
    """Reading `data` as shard `name` gives documents or a CorpusError naming it, and leaves only the shard."""
    fresh(folder)
    path = folder / name
    path.write_bytes(data)
    try:
        read_corpus(path)
    except CorpusError as error:
        assert str(path) in str(error) or path.name in str(error)
    assert list(tree(folder)) == [name]


def check_prefix(folder: Path, idx: bytes, data: bytes) -> None:
    """Sampling the damaged pair gives tokens or a CorpusError naming it, and writes nothing beside it."""
    fresh(folder)
    (folder / "p.idx").write_bytes(idx)
    (folder / "p.bin").write_bytes(data)
    for max_tokens in (None, 20):
        try:
            sample_prefixes([folder / "p"], vocab_size=500, cache_root=folder / "cache", max_tokens=max_tokens)
        except CorpusError as error:
            assert str(folder / "p") in str(error)
    assert sorted(name for name in tree(folder) if not name.startswith("cache")) == ["p.bin", "p.idx"]
    cached = [name for name in tree(folder) if name.startswith("cache/") and ".tmp" in name]
    assert cached == []  # a refused sample leaves no scratch


PARQUET, ZSTD = parquet_bytes(), zstd_bytes()


@SHORT
@given(data=damaged(PARQUET))
def test_damaged_parquet_is_read_or_refused(data, tmp_path):
    check_shard(tmp_path / "shards", "part.parquet", data)


@SHORT
@given(data=damaged(ZSTD))
def test_damaged_zstd_is_read_or_refused(data, tmp_path):
    check_shard(tmp_path / "shards", "part.jsonl.zst", data)


@pytest.fixture(scope="module")
def valid_prefix(tmp_path_factory) -> tuple[bytes, bytes]:
    return prefix_files(tmp_path_factory.mktemp("prefix"))


@SHORT
@given(which=st.sampled_from(["idx", "bin"]), data=st.data())
def test_a_damaged_megatron_pair_is_sampled_or_refused(valid_prefix, which, data, tmp_path):
    check_damaged_prefix(tmp_path / "prefix", valid_prefix, which, data)


def check_damaged_prefix(folder: Path, valid: tuple[bytes, bytes], which: str, data: st.DataObject) -> None:
    idx, binary = valid
    if which == "idx":
        idx = data.draw(damaged(idx))
    else:
        binary = data.draw(damaged(binary))
    check_prefix(folder, idx, binary)


@pytest.mark.slow
@LONG
@given(kind=st.sampled_from(["parquet", "zstd", "idx", "bin"]), data=st.data())
def test_long_fuzz_of_every_corpus_surface(valid_prefix, kind, data, tmp_path):
    if kind in ("parquet", "zstd"):
        valid, name = (PARQUET, "part.parquet") if kind == "parquet" else (ZSTD, "part.jsonl.zst")
        check_shard(tmp_path / "shards", name, data.draw(damaged(valid)))
        return
    check_damaged_prefix(tmp_path / "prefix", valid_prefix, kind, data)
