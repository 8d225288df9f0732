"""The byte-level BPE: trained on the given corpora only, deterministic, cached, loadable by both faces."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from train_entry.data.corpus import Corpus, CorpusError
from train_entry.data.tokenizer import (
    EOD_TOKEN,
    PAD_TOKEN,
    load_tokenizer,
    megatron_tokenizer,
    train_bpe,
)


def test_the_bpe_learns_only_the_corpora_it_is_given(tmp_path: Path, write_jsonl) -> None:
    seen = write_jsonl(tmp_path / "seen.jsonl", ["the zorblaxian fleet"] * 200)
    unseen = write_jsonl(tmp_path / "unseen.jsonl", ["the quendrithic fleet"] * 200)

    tokenizer = load_tokenizer(train_bpe([Corpus.of(seen)], 300, tmp_path / "cache"))

    assert tokenizer.tokenize(" zorblaxian") == ["Ġzorblaxian"]
    assert len(tokenizer.tokenize(" quendrithic")) > 5
    # The other corpus, given, would have been learnt the same way: the input is what decides.
    both = load_tokenizer(train_bpe([Corpus.of(seen), Corpus.of(unseen)], 300, tmp_path / "cache"))
    assert both.tokenize(" quendrithic") == ["Ġquendrithic"]


def test_training_is_deterministic_and_cached(tmp_path: Path, general_sample: Path, tokenizer_dir: Path) -> None:
    again = train_bpe([Corpus.of(general_sample)], 512, tmp_path / "other_cache")

    assert again != tokenizer_dir
    assert (again / "tokenizer.json").read_bytes() == (tokenizer_dir / "tokenizer.json").read_bytes()
    written = (again / "tokenizer.json").stat().st_mtime_ns
    assert train_bpe([Corpus.of(general_sample)], 512, tmp_path / "other_cache") == again
    assert (again / "tokenizer.json").stat().st_mtime_ns == written
    assert train_bpe([Corpus.of(general_sample)], 600, tmp_path / "other_cache") != again


def test_the_tokenizer_loads_with_autotokenizer_and_megatron(tokenizer_dir: Path) -> None:
    hf = AutoTokenizer.from_pretrained(tokenizer_dir, local_files_only=True)
    megatron = megatron_tokenizer(tokenizer_dir)

    assert isinstance(hf, PreTrainedTokenizerFast)
    assert len(hf) == 512
    assert (hf.eos_token, hf.pad_token) == (EOD_TOKEN, PAD_TOKEN)
    assert hf.eos_token_id != hf.pad_token_id
    assert (megatron.vocab_size, megatron.eod, megatron.pad) == (len(hf), hf.eos_token_id, hf.pad_token_id)
    text = "Ünïcödé, 中文 and emoji 🚀 survive byte-level BPE.\n\n  Whitespace too."
    assert hf.decode(hf.encode(text, add_special_tokens=False)) == text
    assert megatron.tokenize(text) == hf.encode(text, add_special_tokens=False)


def test_a_tokenizer_without_eos_is_rejected(tmp_path: Path, tokenizer_dir: Path) -> None:
    without_eos = tmp_path / "without_eos"
    backend = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    PreTrainedTokenizerFast(tokenizer_object=backend, pad_token=PAD_TOKEN).save_pretrained(without_eos)

    with pytest.raises(CorpusError, match=r"without_eos: the tokenizer has no eos token"):
        load_tokenizer(without_eos)
    with pytest.raises(CorpusError, match=r"without_eos: the tokenizer has no eos token"):
        megatron_tokenizer(without_eos)
    with pytest.raises(CorpusError, match=r"not a loadable Hugging Face tokenizer directory"):
        load_tokenizer(tmp_path)


def test_an_unusable_corpus_fails_training_and_caches_nothing(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"not json\n")

    with pytest.raises(CorpusError, match="broken.jsonl: no usable documents"):
        train_bpe([Corpus.of(broken)], 300, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_vocabulary_smaller_than_the_byte_alphabet_is_rejected(tmp_path: Path, general_sample: Path) -> None:
    with pytest.raises(ValueError, match="vocab_size must be at least 258"):
        train_bpe([Corpus.of(general_sample)], 256, tmp_path)
