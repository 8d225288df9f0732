"""Reading corpora: JSONL and plain text, with broken lines counted rather than fatal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from train_entry.data.corpus import CorpusError, CorpusReader, CorpusStats


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
    reader = CorpusReader(path, max_document_bytes=100)

    documents = list(reader)

    assert documents == ["first document", "second\n\ndocument \u00e9\u4e2d"]
    assert reader.stats == CorpusStats(
        documents=2,
        characters=len(documents[0]) + len(documents[1]),
        lines=11,
        skipped_non_utf8=2,
        skipped_malformed=4,
        skipped_empty=2,
        skipped_oversized=1,
    )


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
    reader = CorpusReader(path, max_document_bytes=80)

    documents = list(reader)

    assert documents == ["First document,\nits second line.", "Second document.", "Fifth, last, without a final newline."]
    assert (reader.stats.skipped_non_utf8, reader.stats.skipped_oversized) == (1, 1)
    assert reader.stats.documents == 3


def test_a_line_longer_than_the_limit_is_skipped_whole(tmp_path: Path) -> None:
    # The oversized line is longer than the chunk a line is read in; the next line must survive.
    path = tmp_path / "long.jsonl"
    long_line = json.dumps({"text": "z" * 3_000_000}).encode()
    path.write_bytes(long_line + b"\n" + json.dumps({"text": "after"}).encode() + b"\n")
    reader = CorpusReader(path, max_document_bytes=1_000)

    assert list(reader) == ["after"]
    assert (reader.stats.lines, reader.stats.skipped_oversized) == (2, 1)


def test_a_corpus_without_usable_documents_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b'{"text": "\xff\xfe"}\n{"text": "\xc3"}\nnot json\n')

    with pytest.raises(CorpusError) as raised:
        list(CorpusReader(path))

    message = str(raised.value)
    assert str(path) in message
    assert "3 lines: 2 not UTF-8, 1 malformed JSON" in message
    assert '"text"' in message


def test_an_empty_plain_text_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "blank.txt"
    path.write_text("\n\n   \n")

    with pytest.raises(CorpusError, match=r"blank\.txt: no usable documents \(3 lines\); expected plain text"):
        list(CorpusReader(path))


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_compressed_corpora_read_like_their_uncompressed_selves(tmp_path: Path, suffix: str) -> None:
    import bz2
    import gzip
    import lzma

    compress = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}[suffix]
    jsonl = b"\xef\xbb\xbf" + b"".join(json.dumps({"text": f"doc {k}"}).encode() + b"\n" for k in range(3))
    plain = b"first paragraph\nstill first\n\n\nsecond document\n"
    for name, data in (("train.jsonl", jsonl), ("train.txt", plain)):
        (tmp_path / name).write_bytes(data)
        (tmp_path / f"{name}{suffix}").write_bytes(compress(data))
        plain_reader, compressed_reader = CorpusReader(tmp_path / name), CorpusReader(tmp_path / f"{name}{suffix}")
        assert list(compressed_reader) == list(plain_reader) and compressed_reader.stats == plain_reader.stats
    assert list(CorpusReader(tmp_path / f"train.jsonl{suffix}")) == ["doc 0", "doc 1", "doc 2"]


def test_zstd_and_a_jsonl_without_text_are_errors_that_say_what_to_do(tmp_path: Path) -> None:
    zstd = tmp_path / "train.jsonl.zst"
    zstd.write_bytes(b"\x28\xb5\x2f\xfd not really zstd")
    with pytest.raises(CorpusError, match=r"train.jsonl.zst: .zst compression is not read here.*zstd -d"):
        list(CorpusReader(zstd))
    content = tmp_path / "stack.jsonl"
    content.write_text("".join(json.dumps({"content": "def f(): pass", "lang": "py"}) + "\n" for _ in range(2)))
    with pytest.raises(CorpusError, match=r"the first object's keys: content, lang\); expected JSONL"):
        list(CorpusReader(content))
