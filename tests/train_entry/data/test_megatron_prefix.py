"""Megatron indexed datasets as corpora: read in place when they fit their sample, else a copied sample of whole
strata; never tokenised; refused when another tokenizer made them or their files are not one dataset."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from megatron.core.datasets.indexed_dataset import IndexedDataset

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
