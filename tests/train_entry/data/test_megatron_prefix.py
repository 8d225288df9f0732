"""Megatron indexed datasets as corpora: read in place when they fit their sample, else a copied sample of whole
strata; never tokenised; refused when another tokenizer made them or their files are not one dataset."""

from __future__ import annotations

import json
import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from megatron.core.datasets.indexed_dataset import IndexedDataset, IndexedDatasetBuilder

from train_entry.data.corpus import Corpus, CorpusError
from train_entry.data.indexed import build_indexed
from train_entry.data.megatron_prefix import check_tokenizer, prefix_tokens, sample_prefixes
from train_entry.data.tokenizer import load_tokenizer, train_bpe


def megatron_prefix(folder: Path, name: str, documents: int, tokenizer_dir: Path) -> Path:
    """A prefix as a team's preprocessing leaves it: numbered documents tokenised, .bin/.idx beside the prefix."""
    text = folder / f"{name}.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    text.write_text(
        "".join(json.dumps({"text": f"{k} listing of {name} " * (1 + k % 5)}) + "\n" for k in range(documents))
    )
    built = build_indexed(Corpus.of(text), tokenizer_dir, folder / "cache")
    prefix = folder / f"{name}_text_document"
    for suffix in (".bin", ".idx"):
        shutil.copyfile(built.prefix + suffix, f"{prefix}{suffix}")
    return prefix


def test_a_prefix_within_its_sample_is_read_in_place(tmp_path: Path, tokenizer_dir: Path) -> None:
    prefix = megatron_prefix(tmp_path / "data", "ecommerce", 500, tokenizer_dir)
    total = prefix_tokens(prefix)

    read = sample_prefixes([prefix], vocab_size=512, cache_root=tmp_path / "datasets", max_tokens=total)

    assert read.prefix == str(prefix)
    assert (read.stats.tokens, read.stats.documents, read.stats.share) == (total, 500, 1.0)
    assert not (tmp_path / "datasets").exists()  # nothing copied, nothing tokenised


def test_a_larger_prefix_or_several_give_a_copied_sample_from_across_them(tmp_path: Path, tokenizer_dir: Path) -> None:
    first = megatron_prefix(tmp_path / "data", "first", 15_000, tokenizer_dir)
    second = megatron_prefix(tmp_path / "data", "second", 15_000, tokenizer_dir)
    total = prefix_tokens(first) + prefix_tokens(second)
    tokenizer = load_tokenizer(tokenizer_dir)

    sample = sample_prefixes([first, second], vocab_size=512, cache_root=tmp_path / "datasets", max_tokens=total // 5)

    dataset = IndexedDataset(sample.prefix)
    texts = [tokenizer.decode(dataset[i][:-1].tolist()) for i in range(len(dataset))]
    assert total // 5 <= sample.stats.tokens == int(dataset.sequence_lengths.sum()) < total // 2
    for name in ("first", "second"):  # both prefixes, each from its start to its end, in their order
        numbers = [int(text.split()[0]) for text in texts if f"of {name} " in text]
        assert numbers == sorted(numbers) and numbers[0] < 0.15 * 15_000 and numbers[-1] > 0.85 * 15_000
    assert 0.15 < sample.stats.share < 0.5
    again = sample_prefixes([first, second], vocab_size=512, cache_root=tmp_path / "datasets", max_tokens=total // 5)
    assert again == sample


def test_prefixes_made_by_another_tokenizer_are_refused_naming_both(tmp_path, tokenizer_dir, write_jsonl) -> None:
    other = train_bpe([Corpus.of(write_jsonl(tmp_path / "other.jsonl", ["quite other text"] * 300))], 300, tmp_path)

    check_tokenizer(tokenizer_dir, tokenizer_dir)
    with pytest.raises(CorpusError) as raised:
        check_tokenizer(other, tokenizer_dir)

    message = str(raised.value)
    assert f"made by tokenizer {other}" in message and f"base's tokenizer {tokenizer_dir}" in message
    assert re.search(r"\(\d+ tokens against 512\)", message)


def test_ids_outside_the_vocabulary_and_broken_pairs_are_refused(tmp_path: Path, tokenizer_dir: Path) -> None:
    prefix = megatron_prefix(tmp_path / "data", "listings", 200, tokenizer_dir)
    with pytest.raises(CorpusError, match=r"listings_text_document: token id \d+ is outside the base's 100-token"):
        sample_prefixes([prefix], vocab_size=100, cache_root=tmp_path / "datasets", max_tokens=None)

    Path(f"{prefix}.bin").write_bytes(Path(f"{prefix}.bin").read_bytes()[:-10])
    with pytest.raises(CorpusError, match=r"listings_text_document\.bin: .* bytes where its index describes"):
        prefix_tokens(prefix)
    Path(f"{prefix}.idx").write_bytes(b"not an index at all")
    with pytest.raises(CorpusError, match=r"listings_text_document\.idx: not a Megatron index"):
        prefix_tokens(prefix)


def raw_prefix(folder: Path, sequences: list[list[int]], dtype=np.uint16, name: str = "raw") -> Path:
    """A prefix written by megatron-core's own builder from token ids, as its preprocessing leaves one."""
    folder.mkdir(parents=True, exist_ok=True)
    prefix = folder / name
    builder = IndexedDatasetBuilder(f"{prefix}.bin", dtype=dtype)
    for ids in sequences:
        builder.add_document(np.asarray(ids, dtype=dtype), [len(ids)])
    builder.finalize(f"{prefix}.idx")
    return prefix


SEQUENCES = [[1, 2, 3, 0], [4, 5, 0], [6, 7, 8, 9, 0]]


def patched(path: Path, offset: int, fmt: str, value) -> None:
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, offset, value)
    path.write_bytes(bytes(data))


# Offsets in the index of SEQUENCES: a 34-byte header (magic 9, version 8, dtype 1, sequences 8, documents 8),
# then 3 int32 lengths, 3 int64 pointers and 4 int64 document boundaries.
HOSTILE_INDEXES = {
    "truncated": (lambda idx: idx.write_bytes(idx.read_bytes()[:-5]), r"bytes where its header's 3 sequences"),
    "empty": (lambda idx: idx.write_bytes(b""), r"not a Megatron index"),
    "a lying sequence count": (lambda idx: patched(idx, 18, "<Q", 1000), r"3 sequences|1,000 sequences"),
    "an inflated length": (lambda idx: patched(idx, 34 + 4, "<i", 1_000_000), r"sequence 2 starts at byte"),
    "a negative length": (lambda idx: patched(idx, 34, "<i", -4), r"sequence 0 has length -4"),
    "a bad pointer": (lambda idx: patched(idx, 34 + 12 + 8, "<q", 2), r"sequence 1 starts at byte 2 .* end at 8"),
    "a lying document boundary": (lambda idx: patched(idx, 34 + 36 + 24, "<q", 7), r"boundaries run from 0 to 7"),
    "boundaries out of order": (lambda idx: patched(idx, 34 + 36 + 8, "<q", 3), r"boundary 2 \(2\) is before"),
    "another version": (lambda idx: patched(idx, 9, "<Q", 2), r"version 2; megatron-core reads version 1"),
    "a dtype code of none": (lambda idx: patched(idx, 17, "<B", 42), r"dtype code 42 is none"),
    "labelled float32": (lambda idx: patched(idx, 17, "<B", 7), r"stored as float32, not integer token ids"),
}


@pytest.mark.parametrize("damage", HOSTILE_INDEXES.values(), ids=list(HOSTILE_INDEXES))
def test_an_index_that_does_not_describe_its_bin_is_refused_naming_it(damage, tmp_path: Path) -> None:
    prefix = raw_prefix(tmp_path, SEQUENCES)
    change, message = damage
    change(Path(f"{prefix}.idx"))
    before = {path: path.read_bytes() for path in tmp_path.iterdir()}

    with pytest.raises(CorpusError, match=message) as raised:
        sample_prefixes([prefix], vocab_size=512, cache_root=tmp_path / "datasets", max_tokens=None)

    assert str(prefix) in str(raised.value)
    assert {path: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_a_prefix_of_no_sequence_is_refused(tmp_path: Path) -> None:
    prefix = raw_prefix(tmp_path, [])
    with pytest.raises(CorpusError, match=r"raw\.idx: holds no sequence"):
        prefix_tokens(prefix)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_a_bin_of_floats_is_refused_by_its_dtype(dtype, tmp_path: Path) -> None:
    prefix = raw_prefix(tmp_path, SEQUENCES, dtype=dtype)
    with pytest.raises(CorpusError, match=rf"raw\.idx: its tokens are stored as {np.dtype(dtype).name}"):
        sample_prefixes([prefix], vocab_size=512, cache_root=tmp_path / "datasets", max_tokens=None)


@pytest.mark.parametrize("max_tokens", [None, 4], ids=["read in place", "a copied sample"])
def test_negative_ids_are_refused_read_in_place_or_sampled(max_tokens, tmp_path: Path) -> None:
    prefix = raw_prefix(tmp_path, [[1, 2, 0], [3, -5, 0], [6, 7, 0]] * 2, dtype=np.int32)
    with pytest.raises(CorpusError, match=r"raw: token id -5 is negative"):
        sample_prefixes([prefix], vocab_size=512, cache_root=tmp_path / "datasets", max_tokens=max_tokens)
    assert list((tmp_path / "datasets").glob("*")) == []  # no sample cached, no scratch left


def test_a_sampled_sequence_outside_the_vocabulary_is_refused(tmp_path: Path) -> None:
    prefix = raw_prefix(tmp_path, [[1, 2, 0]] * 50 + [[3, 900, 0]] * 50)
    with pytest.raises(CorpusError, match=r"raw: token id 900 is outside the base's 512-token vocabulary"):
        sample_prefixes([prefix], vocab_size=512, cache_root=tmp_path / "datasets", max_tokens=150)
