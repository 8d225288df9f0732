"""The blended training stream and the fixed validation sets, built by megatron-core from the mix's weights."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch

from train_entry.data.blend import Batch, build_train_stream, build_validation_sets
from train_entry.data.corpus import Corpus
from train_entry.data.indexed import build_indexed
from train_entry.data.tokenizer import load_tokenizer, megatron_tokenizer
from train_entry.mix import MixRatio, blend_weights
from train_entry.trial_config import CorpusPrefixes

WORDS = {
    "domain": ("price", "shipping", "cart", "warranty", "discount", "checkout", "refund", "seller"),
    "general": ("river", "mountain", "history", "novel", "kingdom", "winter", "harbour", "meadow"),
    "non_english": ("fluss", "gebirge", "geschichte", "roman", "königreich", "winterzeit", "hafen", "wiese"),
}
"""Each generated corpus uses only its own words, so a sample's text tells which corpus it came from."""

SEQ_LEN = 32
"""Short samples: each still holds a dozen whole words, enough to tell its corpus."""


@pytest.fixture(scope="session")
def splits(tmp_path_factory, tokenizer_dir: Path, generate_corpus) -> dict[str, CorpusPrefixes]:
    """Indexed train and valid corpora (CorpusPrefixes per split) whose words tell the corpus apart."""
    corpora = tmp_path_factory.mktemp("generated")
    cache = tmp_path_factory.mktemp("indexed_cache")
    prefixes = {}
    for seed, (split, documents) in enumerate((("train", 300), ("valid", 40))):
        paths = {}
        for source, words in WORDS.items():
            corpus = generate_corpus(corpora / source / f"{split}.jsonl", words, documents=documents, seed=seed)
            paths[source] = build_indexed(Corpus.of(corpus), tokenizer_dir, cache).prefix
        prefixes[split] = CorpusPrefixes(**paths)
    return prefixes


@pytest.fixture(scope="session")
def megatron(tokenizer_dir: Path):
    return megatron_tokenizer(tokenizer_dir)


def sources_of(batch: Batch, tokenizer) -> list[str]:
    """The corpus each sample's text comes from, told by its words (the first and last may be cut)."""
    sources = []
    for text in tokenizer.batch_decode(batch.tokens.tolist()):
        words = set(re.findall(r"[^\W\d_]+", text)[1:-1])
        (source,) = [name for name, vocabulary in WORDS.items() if words & set(vocabulary)]
        sources.append(source)
    return sources


def stream_of(splits, mix: MixRatio, non_english_share: float, *, num_samples: int, megatron, cache_dir: Path):
    return build_train_stream(
        splits["train"],
        mix,
        non_english_share,
        num_samples=num_samples,
        seq_len=SEQ_LEN,
        seed=0,
        tokenizer=megatron,
        cache_dir=cache_dir,
    )


def validation_of(splits, non_english_share: float, *, seed: int, megatron, cache_dir: Path):
    return build_validation_sets(
        splits["valid"],
        non_english_share,
        num_sequences=64,
        seq_len=SEQ_LEN,
        seed=seed,
        tokenizer=megatron,
        cache_dir=cache_dir,
    )


@pytest.mark.parametrize("non_english_share", [0.0, 0.1])
@pytest.mark.parametrize("ratio", ["4:1", "1:1", "1:4"])
def test_the_stream_mixes_corpora_at_the_requested_shares(
    ratio: str, non_english_share: float, splits, megatron, tokenizer_dir: Path, tmp_path: Path
) -> None:
    mix = MixRatio.parse(ratio)
    stream = stream_of(splits, mix, non_english_share, num_samples=400, megatron=megatron, cache_dir=tmp_path)
    expected = blend_weights(mix, non_english_share)

    measured = stream.token_shares()
    tokenizer = load_tokenizer(tokenizer_dir)
    read = [source for step in range(8) for source in sources_of(stream.batch(step, 50), tokenizer)]

    assert measured["domain"] == pytest.approx(mix.domain_share, abs=0.02)
    assert measured == pytest.approx(expected, abs=0.02)
    # The samples batch() hands out really come from those corpora, in those shares.
    assert {source: read.count(source) / len(read) for source in expected} == pytest.approx(expected, abs=0.02)


def test_batches_are_next_token_pairs_in_stream_order(splits, megatron, tmp_path: Path) -> None:
    stream = stream_of(splits, MixRatio(1, 1), 0.0, num_samples=64, megatron=megatron, cache_dir=tmp_path)

    first, second = stream.batch(0, 16), stream.batch(1, 16)
    whole = stream.batch(0, 32)

    assert first.tokens.shape == first.labels.shape == (16, SEQ_LEN)
    assert first.tokens.dtype == first.labels.dtype == torch.long
    assert torch.equal(first.labels[:, :-1], first.tokens[:, 1:])
    assert torch.equal(torch.cat([first.tokens, second.tokens]), whole.tokens)
    assert len(stream) == 64
    with pytest.raises(IndexError, match="outside the stream's 64 samples"):
        stream.batch(4, 16)


def test_the_workers_of_a_sharded_trial_read_the_batch_one_process_reads_in_equal_parts(
    splits, megatron, tmp_path: Path
) -> None:
    stream = stream_of(splits, MixRatio(1, 1), 0.0, num_samples=64, megatron=megatron, cache_dir=tmp_path)

    parts = [stream.worker_share(rank=rank, parts=4).batch(1, 16) for rank in range(4)]

    assert [part.tokens.shape for part in parts] == [(4, SEQ_LEN)] * 4
    assert torch.equal(torch.cat([part.tokens for part in parts]), stream.batch(1, 16).tokens)
    assert torch.equal(torch.cat([part.labels for part in parts]), stream.batch(1, 16).labels)
    with pytest.raises(ValueError, match="a batch of 16 sequences does not split evenly over 3 workers"):
        stream.worker_share(rank=0, parts=3).batch(0, 16)


def test_validation_sets_are_the_same_for_the_same_seed(splits, megatron, tmp_path: Path) -> None:
    first = validation_of(splits, 0.25, seed=7, megatron=megatron, cache_dir=tmp_path / "first")
    again = validation_of(splits, 0.25, seed=7, megatron=megatron, cache_dir=tmp_path / "again")
    other_seed = validation_of(splits, 0.25, seed=8, megatron=megatron, cache_dir=tmp_path / "other")

    for side in ("domain", "general"):
        assert getattr(first, side).tokens.shape == (64, SEQ_LEN)
        assert torch.equal(getattr(first, side).tokens, getattr(again, side).tokens)
        assert torch.equal(getattr(first, side).labels, getattr(again, side).labels)
        assert not torch.equal(getattr(first, side).tokens, getattr(other_seed, side).tokens)


def test_the_general_validation_set_holds_non_english_text_at_its_share(
    splits, megatron, tokenizer_dir: Path, tmp_path: Path
) -> None:
    sets = validation_of(splits, 0.25, seed=0, megatron=megatron, cache_dir=tmp_path)
    tokenizer = load_tokenizer(tokenizer_dir)

    assert set(sources_of(sets.domain, tokenizer)) == {"domain"}
    general = sources_of(sets.general, tokenizer)
    assert general.count("non_english") / len(general) == pytest.approx(0.25, abs=0.02)
    assert general.count("general") / len(general) == pytest.approx(0.75, abs=0.02)


def test_a_non_english_share_needs_a_non_english_corpus(splits, megatron, tmp_path: Path) -> None:
    english_only = splits["train"].model_copy(update={"non_english": None})

    with pytest.raises(ValueError, match="needs a non_english indexed corpus"):
        stream_of({"train": english_only}, MixRatio(1, 1), 0.1, num_samples=16, megatron=megatron, cache_dir=tmp_path)


def test_building_a_blend_leaves_the_process_as_it_was(splits, megatron, tmp_path: Path) -> None:
    """No process group left behind, and not torch's excepthook either: it prefixes every line of a traceback with
    "[rank0]: ", once more at each build."""
    hook = sys.excepthook
    for attempt in range(2):
        build_validation_sets(splits["valid"], 0.0, num_sequences=4, seq_len=SEQ_LEN, seed=attempt,
                              tokenizer=megatron, cache_dir=tmp_path / str(attempt))  # fmt: skip
    assert not torch.distributed.is_initialized() and sys.excepthook is hook
