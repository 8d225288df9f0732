"""Every registered corpus format passes one suite: its name declares it, its shards read back the documents
written, bytes of another kind are refused, and a shard with nothing usable says what the format expects; and a
corpus's `format` reads shards whose names say another thing."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from train_entry.data.corpus import DEFAULT_MAX_DOCUMENT_BYTES, Corpus, CorpusError
from train_entry.data.corpus_formats import FORMATS, declared_format
from train_entry.data.sample import CorpusSample

DOCUMENTS = ["first document", "second one\nover two lines", "third"]


def _jsonl(texts: list[str]) -> bytes:
    return b"".join(json.dumps({"text": text}).encode() + b"\n" for text in texts)


def _text(texts: list[str]) -> bytes:
    return "\n\n".join(texts).encode() + b"\n"


def _parquet(texts: list[str]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table({"text": texts}), sink, row_group_size=2)
    return sink.getvalue()


WRITERS: dict[str, tuple[str, Callable[[list[str]], bytes]]] = {
    "jsonl": (".jsonl", _jsonl),
    "text": (".txt", _text),
    "parquet": (".parquet", _parquet),
}
"""A shard of each format and the suffix that declares it: a new format adds its writer here to pass the suite."""


def read(corpus: Corpus) -> list[str]:
    size = sum(path.stat().st_size for path in corpus.shards())
    with CorpusSample(corpus, expected_bytes=size, max_document_bytes=DEFAULT_MAX_DOCUMENT_BYTES) as sample:
        return [document for _, document in sample.in_order()]


def test_every_registered_format_has_a_shard_writer_in_this_suite() -> None:
    assert set(WRITERS) == set(FORMATS)


@pytest.mark.parametrize("name", list(FORMATS))
def test_a_shard_named_for_its_format_reads_back_its_documents(tmp_path: Path, name: str) -> None:
    suffix, write = WRITERS[name]
    path = tmp_path / f"shard{suffix}"
    path.write_bytes(write(DOCUMENTS))

    assert declared_format(path).format is FORMATS[name]
    assert read(Corpus.of(path)) == DOCUMENTS


@pytest.mark.parametrize("name", list(FORMATS))
def test_bytes_of_another_kind_are_refused_naming_the_file(tmp_path: Path, name: str) -> None:
    suffix, _ = WRITERS[name]
    path = tmp_path / f"archive{suffix}"
    path.write_bytes(b"PK\x03\x04" + b"\0" * 64)  # a zip file

    with pytest.raises(CorpusError, match=f"{path}: .*(zip|not a Parquet file)"):
        read(Corpus.of(path))


@pytest.mark.parametrize("name", list(FORMATS))
def test_a_shard_with_nothing_usable_says_what_its_format_expects(tmp_path: Path, name: str) -> None:
    suffix, write = WRITERS[name]
    path = tmp_path / f"blank{suffix}"
    path.write_bytes(write(["   ", "\t"]))

    with pytest.raises(CorpusError) as raised:
        read(Corpus.of(path))

    assert f"{path}: no usable documents" in str(raised.value)
    assert FORMATS[name].expected("text") in str(raised.value)


def test_a_named_format_reads_shards_whose_names_say_another(tmp_path: Path) -> None:
    path = tmp_path / "export.txt"
    path.write_bytes(_jsonl(DOCUMENTS))

    assert read(Corpus.of(path)) == [_jsonl(DOCUMENTS).decode().rstrip("\n")]  # by its name: one text document
    assert read(Corpus((path,), format="jsonl")) == DOCUMENTS


def test_a_compressed_shard_of_a_format_that_compresses_itself_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rows.data.gz"
    path.write_bytes(b"\x1f\x8b" + b"\0" * 32)

    with pytest.raises(CorpusError, match=r"rows.data.gz: a gzip-compressed Parquet file is not read"):
        read(Corpus((path,), format="parquet"))
