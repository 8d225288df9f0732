"""Validation draws: disjoint sets of whole documents, each a validation set's worth of tokens, draw d the same
however many draws are asked for, a corpus too small for them dealt out or refused."""

from __future__ import annotations

import numpy as np
import pytest
from megatron.core.datasets.indexed_dataset import DType, IndexedDataset, IndexedDatasetBuilder

from train_entry.data.corpus import CorpusError
from train_entry.data.draws import dealt, split_draws


def write_prefix(path, documents: list[np.ndarray]) -> str:
    builder = IndexedDatasetBuilder(f"{path}.bin", dtype=DType.optimal_dtype(1000))
    for document in documents:
        builder.add_document(document, [len(document)])
    builder.finalize(f"{path}.idx")
    return str(path)


def documents_of(prefix: str) -> list[tuple[int, ...]]:
    dataset = IndexedDataset(prefix)
    return [tuple(dataset[i].tolist()) for i in range(len(dataset))]


@pytest.fixture
def corpus(tmp_path) -> tuple[str, list[np.ndarray]]:
    rng = np.random.default_rng(0)
    # 60 documents of 20-200 tokens, each one's first token its number: a document is recognisable in any draw
    documents = [np.concatenate(([k], rng.integers(100, 999, int(rng.integers(20, 200))))) for k in range(60)]
    return write_prefix(tmp_path / "valid", documents), documents


def test_draws_are_disjoint_whole_documents_each_holding_a_validation_sets_tokens(corpus, tmp_path):
    prefix, documents = corpus

    draws = split_draws(prefix, draws=4, draw_tokens=1000, cache_root=tmp_path / "cache", label="v")

    seen = [set(documents_of(draw)) for draw in draws]
    originals = {tuple(document.tolist()) for document in documents}
    assert all(found <= originals for found in seen)  # whole documents, unchanged
    assert all(not (a & b) for i, a in enumerate(seen) for b in seen[i + 1 :])  # disjoint
    assert all(sum(len(d) for d in found) >= 1000 for found in seen)


def test_draw_d_is_the_same_however_many_draws_are_asked_for(corpus, tmp_path):
    prefix, _ = corpus
    three = split_draws(prefix, draws=3, draw_tokens=1000, cache_root=tmp_path / "a", label="v")
    five = split_draws(prefix, draws=5, draw_tokens=1000, cache_root=tmp_path / "b", label="v")

    assert [documents_of(draw) for draw in three] == [documents_of(draw) for draw in five[:3]]
    other_seed = split_draws(prefix, draws=3, draw_tokens=1000, seed=1, cache_root=tmp_path / "c", label="v")
    assert documents_of(other_seed[0]) != documents_of(three[0])


def test_a_corpus_too_small_for_full_draws_is_dealt_out_and_one_with_too_few_documents_refused(corpus, tmp_path):
    prefix, documents = corpus
    total = sum(len(d) for d in documents)

    dealt_out = split_draws(prefix, draws=4, draw_tokens=total, cache_root=tmp_path / "a", label="v")
    assert sorted(len(documents_of(draw)) for draw in dealt_out) == [15, 15, 15, 15]

    with pytest.raises(CorpusError, match=r"^data\.domain\.valid holds 60 document\(s\) .* 61 disjoint draws"):
        split_draws(prefix, draws=61, draw_tokens=10, cache_root=tmp_path / "b", label="data.domain.valid")


def test_a_long_document_never_leaves_a_draw_empty():
    lengths = np.array([5000, 10, 10, 10, 10, 10])

    draws = dealt(lengths, draws=3, draw_tokens=100, seed=0)

    assert all(len(draw) for draw in draws)
    assert sorted(np.concatenate(draws).tolist()) == list(range(6))
