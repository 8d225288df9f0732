"""Reading corpora: JSONL, plain text, zstd and the other codecs, Parquet, shards; broken lines counted rather than
fatal, and a file that is not what its name says refused by its magic bytes."""

from __future__ import annotations

import bz2
import dataclasses
import gzip
import json
import lzma
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from cli import main
from train_entry.data.corpus import DEFAULT_MAX_DOCUMENT_BYTES, Corpus, CorpusError, CorpusStats
from train_entry.data.sample import CorpusSample

COMPRESS = {
    ".gz": gzip.compress,
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
    ".zst": zstandard.ZstdCompressor(write_checksum=True).compress,
}


def read(*paths: Path, text_field: str = "text", max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES):
    """Every document of the corpus in its own order, and what reading it counted (sizes left out)."""
    corpus = Corpus.of(*paths, text_field=text_field)
    size = sum(path.stat().st_size for path in corpus.shards())
    with CorpusSample(corpus, expected_bytes=size, max_document_bytes=max_document_bytes) as sample:
        documents = [document for _, document in sample.in_order()]
    return documents, dataclasses.replace(sample.stats, corpus_bytes=0, sampled_bytes=0)


def jsonl(*texts: str) -> bytes:
    return b"".join(json.dumps({"text": text}).encode() + b"\n" for text in texts)


def test_jsonl_counts_every_skipped_line_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(
        b"".join(
            [
                json.dumps({"text": "first document", "id": 1}).encode() + b"\n",
                b'{"text": "caf\xe9 in latin-1"}\n',  # not UTF-8
                b'{"text": "unterminated\n',  # malformed JSON
                json.dumps({"body": "no text field"}).encode() + b"\n",
                json.dumps({"text": 42}).encode() + b"\n",
                json.dumps(["text", "not an object"]).encode() + b"\n",
                json.dumps({"text": "   \n  "}).encode() + b"\n",  # empty
                b"\n",  # blank line: no document
                json.dumps({"text": "x" * 200}).encode() + b"\n",  # oversized
                json.dumps({"text": "\ud800 lone surrogate"}).encode() + b"\n",  # valid JSON, not encodable
                json.dumps({"text": "second\n\ndocument \u00e9\u4e2d"}, ensure_ascii=False).encode() + b"\r\n",
            ]
        )
    )

    documents, stats = read(path, max_document_bytes=100)

    assert documents == ["first document", "second\n\ndocument \u00e9\u4e2d"]
    assert stats == CorpusStats(
        documents=2,
        characters=len(documents[0]) + len(documents[1]),
        lines=11,
        skipped_non_utf8=2,
        skipped_malformed=4,
        skipped_empty=2,
        skipped_oversized=1,
    )


def test_a_line_nested_100000_deep_is_one_malformed_line(tmp_path: Path) -> None:
    # json.loads recurses once per level and raises RecursionError far below this depth.
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n" + jsonl("after"))

    documents, stats = read(path)

    assert documents == ["after"]
    assert (stats.lines, stats.skipped_malformed) == (2, 1)


def test_plain_text_documents_are_separated_by_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(
        b"\xef\xbb\xbfFirst document,\r\nits second line.\r\n\r\n\n  \n"
        b"Second document.\n\n"
        b"Third: a bad byte \xff here.\n"
        b"still the third document\n\n"
        b"Fourth, far too long " + b"y" * 100 + b"\n"
        b"and its tail.\n\n"
        b"Fifth, last, without a final newline."
    )

    documents, stats = read(path, max_document_bytes=80)

    assert documents == [
        "First document,\nits second line.",
        "Second document.",
        "Fifth, last, without a final newline.",
    ]
    assert (stats.skipped_non_utf8, stats.skipped_oversized, stats.documents) == (1, 1, 3)


def test_a_line_longer_than_the_limit_is_skipped_whole(tmp_path: Path) -> None:
    # The oversized line is longer than the chunk a line is read in; the next line must survive.
    path = tmp_path / "long.jsonl"
    path.write_bytes(jsonl("z" * 3_000_000, "after"))

    documents, stats = read(path, max_document_bytes=1_000)

    assert documents == ["after"]
    assert (stats.lines, stats.skipped_oversized) == (2, 1)


def test_a_corpus_without_usable_documents_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b'{"text": "\xff\xfe"}\n{"text": "\xc3"}\nnot json\n')

    with pytest.raises(CorpusError) as raised:
        read(path)

    message = str(raised.value)
    assert str(path) in message
    assert "3 lines: 2 not UTF-8, 1 malformed JSON" in message
    assert '"text"' in message


def test_an_empty_plain_text_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "blank.txt"
    path.write_text("\n\n   \n")

    with pytest.raises(CorpusError, match=r"blank\.txt: no usable documents \(3 lines\); expected plain text"):
        read(path)


@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_compressed_corpora_read_like_their_uncompressed_selves(tmp_path: Path, suffix: str) -> None:
    compress = COMPRESS[suffix]
    data = {
        "train.jsonl": b"\xef\xbb\xbf" + jsonl(*(f"doc {k}" for k in range(3))),
        "train.txt": b"first paragraph\nstill first\n\n\nsecond document\n",
    }
    for name, content in data.items():
        (tmp_path / name).write_bytes(content)
        # Two members (gzip), streams (bz2, xz) or frames (zstd) one after another read as one stream.
        half = len(content) // 2
        (tmp_path / f"{name}{suffix}").write_bytes(compress(content[:half]) + compress(content[half:]))
        assert read(tmp_path / f"{name}{suffix}") == read(tmp_path / name)
    assert read(tmp_path / f"train.jsonl{suffix}")[0] == ["doc 0", "doc 1", "doc 2"]


def test_zstd_jsonl_streams_in_bounded_pieces(tmp_path: Path) -> None:
    texts = [f"document {k} " + "words " * (k % 40) for k in range(20_000)]
    path = tmp_path / "pile-shard.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(jsonl(*texts)))  # no checksum, as some writers do

    documents, stats = read(path)

    assert documents == texts
    assert stats.lines == len(texts)


@pytest.mark.parametrize(
    ("damage", "codec"),
    [
        ("truncated .jsonl.gz", "gzip"),
        ("CRC-corrupt .jsonl.gz", "gzip"),
        ("truncated .jsonl.zst", "zstd"),
        ("truncated .jsonl.xz", "xz"),
        ("truncated .jsonl.bz2", "bzip2"),
    ],
)
def test_a_damaged_compressed_corpus_is_an_error_naming_the_file_and_codec(tmp_path: Path, damage: str, codec: str):
    path = damaged_corpus(tmp_path, damage)

    with pytest.raises(CorpusError) as raised:
        read(path)

    message = str(raised.value)
    assert str(path) in message and f"the {codec} stream is truncated or corrupt" in message
    assert "\n" not in message


def damaged_corpus(folder: Path, damage: str) -> Path:
    """A compressed JSONL corpus of a few hundred KB, damaged as named: cut in the middle or its CRC zeroed."""
    content = jsonl(*(f"document {k}: " + "lorem ipsum " * 20 for k in range(2_000)))
    suffix = "." + damage.split(".")[-1]
    compressed = COMPRESS[suffix](content)
    if damage.startswith("truncated"):
        compressed = compressed[: len(compressed) // 2]
    else:
        compressed = compressed[:-8] + b"\0\0\0\0" + compressed[-4:]  # gzip's trailer: CRC32, then ISIZE
    path = folder / f"{damage.split()[0]}{suffix.replace('.', '-')}.jsonl{suffix}"
    path.write_bytes(compressed)
    return path


def test_plain_jsonl_named_gz_is_refused_as_not_gzip(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl.gz"
    path.write_bytes(jsonl("not compressed at all"))

    with pytest.raises(CorpusError, match=r"train\.jsonl\.gz: named \.gz but it is not gzip data \(.*JSON lines\)"):
        read(path)


def test_gzip_data_named_jsonl_is_refused_as_looking_compressed(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"
    path.write_bytes(gzip.compress(jsonl(*(f"doc {k}" for k in range(3000)))))

    with pytest.raises(
        CorpusError, match=r"train\.jsonl: looks compressed \(gzip magic bytes 1f 8b.*name it train\.jsonl\.gz"
    ):
        read(path)


def test_parquet_named_jsonl_and_text_named_parquet_are_refused_by_their_magic_bytes(tmp_path: Path) -> None:
    parquet = tmp_path / "listings.jsonl"
    pq.write_table(pa.table({"text": ["a product", "another"]}), parquet)
    with pytest.raises(CorpusError, match=r"listings\.jsonl: looks like Parquet \(magic bytes 50 41 52 31\)"):
        read(parquet)

    fake = tmp_path / "listings.parquet"
    fake.write_bytes(jsonl("a product"))
    with pytest.raises(CorpusError, match=r"listings\.parquet: named \.parquet but it is not a Parquet file \(.*JSON"):
        read(fake)


def test_formats_not_read_say_what_to_give_instead(tmp_path: Path) -> None:
    lz4 = tmp_path / "train.jsonl.lz4"
    lz4.write_bytes(b"\x04\x22\x4d\x18 not really lz4")
    with pytest.raises(CorpusError, match=r"train\.jsonl\.lz4: \.lz4 files are not read here; give lz4 -d instead"):
        read(lz4)
    half = tmp_path / "ecommerce_text_document.bin"
    half.write_bytes(b"\0" * 64)
    with pytest.raises(CorpusError, match=r"\.bin files are not read here; give the prefix without \.bin/\.idx"):
        read(half)


def test_parquet_is_read_a_row_group_at_a_time_from_the_named_column(tmp_path: Path) -> None:
    texts = [f"listing {k}: " + "soft cotton " * (k % 7) for k in range(1_000)]
    path = tmp_path / "listings.parquet"
    table = pa.table({"id": list(range(len(texts))), "content": texts[:-2] + [None, "   "]})
    pq.write_table(table, path, row_group_size=128)
    assert pq.ParquetFile(path).metadata.num_row_groups == 8

    documents, stats = read(path, text_field="content")

    assert documents == texts[:-2]
    assert (stats.lines, stats.skipped_empty) == (1_000, 2)
    with pytest.raises(CorpusError, match=r"no column 'text' in this Parquet file \(its columns: id, content\)"):
        read(path)
    with pytest.raises(CorpusError, match=r"Parquet column 'id' holds int64, not strings"):
        read(path, text_field="id")


def test_a_directory_or_glob_of_shards_of_any_format_reads_as_one_corpus(tmp_path: Path) -> None:
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "00.jsonl").write_bytes(jsonl("a", "b"))
    (shards / "01.jsonl.zst").write_bytes(COMPRESS[".zst"](jsonl("c")))
    pq.write_table(pa.table({"text": ["d", "e"]}), shards / "02.parquet")
    (shards / "03.txt.gz").write_bytes(gzip.compress(b"f\n\ng\n"))
    (shards / ".hidden.jsonl").write_bytes(jsonl("never read"))

    assert read(shards)[0] == ["a", "b", "c", "d", "e", "f", "g"]
    assert read(shards / "0[13]*")[0] == ["c", "f", "g"]
    with pytest.raises(CorpusError, match=r"no file matches this glob"):
        read(shards / "*.arrow")


HOSTILE = ["deep nesting", "truncated .jsonl.gz", "CRC-corrupt .jsonl.gz", "plain named .gz", "gzip named .jsonl"]


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_domain_corpus_is_exit_2_with_one_line(case, write_tiny_spec, tmp_path, capsys, monkeypatch) -> None:
    folder = write_tiny_spec().parent / "hostile"
    folder.mkdir(exist_ok=True)
    if case == "deep nesting":  # the one bad line is counted; a file of nothing else has no usable document
        path = folder / "deep.jsonl"
        path.write_bytes(b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
        expected = "1 malformed JSON"
    elif case == "plain named .gz":
        path = folder / "plain.jsonl.gz"
        path.write_bytes(jsonl("not compressed"))
        expected = "not gzip data"
    elif case == "gzip named .jsonl":
        path = folder / "gzip.jsonl"
        path.write_bytes(gzip.compress(jsonl("compressed")))
        expected = "looks compressed"
    else:
        path = damaged_corpus(folder, case)
        expected = "the gzip stream is truncated or corrupt"
    spec = write_tiny_spec(
        f"{path.name}.yaml", data={"domain": {"train": str(path), "valid": "corpora/ecommerce/valid.jsonl"}}
    )
    monkeypatch.chdir(tmp_path)

    assert main(["trial", str(spec), "--lr-fraction", "0.1", "--mix", "1:1", "--output", str(tmp_path / "t")]) == 2

    error = capsys.readouterr().err.strip()
    assert str(path) in error and expected in error
    assert len(error.splitlines()) == 1 and "Traceback" not in error


@pytest.mark.timeout(60)
def test_a_recursive_glob_over_symlink_loops_reads_each_real_file_once(tmp_path: Path) -> None:
    """With one link back to a parent, the glob read a 100-document file 41 times; with two it ran for minutes."""
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "docs.jsonl").write_bytes(jsonl(*(f"document {k}" for k in range(100))))
    (tree / "a" / "b" / "more.jsonl").write_bytes(jsonl("more"))
    (tree / "a" / "b" / "up").symlink_to(tree)  # two loops, each back to an ancestor
    (tree / "a" / "back").symlink_to(tree / "a")
    (tree / "same.jsonl").symlink_to(tree / "a" / "docs.jsonl")  # a second path to one file

    assert Corpus.of(tree / "**" / "*.jsonl").shards() == [tree / "a" / "b" / "more.jsonl", tree / "a" / "docs.jsonl"]
    documents, stats = read(tree / "**" / "*.jsonl")
    assert (len(documents), stats.documents) == (101, 101)


def test_the_glob_matches_what_pythons_glob_matches_in_a_tree_without_links(tmp_path: Path) -> None:
    import glob

    for name in ("x.jsonl", "a/y.jsonl", "a/b/z.jsonl", "a/.hidden/h.jsonl", ".top/t.jsonl", "a/b/w.txt", "c/.v.jsonl"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(jsonl(name))
    for pattern in ("**/*.jsonl", "**", "a/**/*.jsonl", "**/b/*", "**/.hidden/*.jsonl", "a/**", "*/**/*.txt"):
        expected = sorted(Path(m) for m in glob.glob(str(tmp_path / pattern), recursive=True) if Path(m).is_file())
        assert Corpus.of(tmp_path / pattern).shards() == expected, pattern


def test_a_parquet_string_that_is_not_utf8_is_refused_naming_the_file_and_row_group(tmp_path: Path) -> None:
    """Found by tests/train_entry/data/test_fuzz_corpora.py: it was pyarrow's UnicodeDecodeError, a traceback."""
    import numpy as np

    offsets = pa.py_buffer(np.array([0, 2, 4], dtype=np.int32).tobytes())
    text = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"ok\xff\xfe")])  # written unvalidated
    path = tmp_path / "damaged.parquet"
    pq.write_table(pa.table({"text": text}), path)

    with pytest.raises(CorpusError, match=r"damaged\.parquet: row group 0 of this Parquet file holds a string that"):
        read(path)
