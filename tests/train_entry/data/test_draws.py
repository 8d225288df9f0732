"""Validation texts: the pool and the confirmation draws are disjoint sets of whole documents (or of chunks, where the
corpus's owner says they are independent), dealt by count, and a text too short for a text error is refused before
any compute with its figure and what would give more."""

from __future__ import annotations

import numpy as np
import pytest
from megatron.core.datasets.indexed_dataset import DType, IndexedDataset, IndexedDatasetBuilder

from train_entry.data.corpus import CorpusError
from train_entry.data.draws import MIN_DOCUMENTS, TextSide, check_texts, dealt, split_texts, text_lengths


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
    # 60 documents of 20-2000 tokens, each one's first token its number: a document is recognisable in any text
    documents = [np.concatenate(([k], rng.integers(100, 999, int(rng.integers(20, 2000))))) for k in range(60)]
    return write_prefix(tmp_path / "valid", documents), documents


def test_the_pool_and_draws_are_disjoint_whole_documents_the_pool_holding_half(corpus, tmp_path):
    prefix, documents = corpus

    texts = split_texts(prefix, draws=2, cache_root=tmp_path / "cache", label="v")

    seen = [documents_of(text) for text in texts]
    originals = {tuple(document.tolist()) for document in documents}
    assert all(set(found) <= originals for found in seen)  # whole documents, unchanged
    assert sum(len(found) for found in seen) == 60 and len(set().union(*map(set, seen))) == 60  # disjoint, all dealt
    assert [len(found) for found in seen] == [30, 15, 15]  # by count, whatever the lengths
    assert [text_lengths(text) for text in texts] == [[len(d) for d in found] for found in seen]


def test_without_confirmation_the_pool_is_every_document_and_the_partition_is_the_corpuss_own(corpus, tmp_path):
    prefix, _ = corpus

    (pool,) = split_texts(prefix, draws=0, cache_root=tmp_path / "a", label="v")
    again = split_texts(prefix, draws=2, cache_root=tmp_path / "b", label="v")
    other_seed = split_texts(prefix, draws=2, seed=1, cache_root=tmp_path / "c", label="v")

    assert len(documents_of(pool)) == 60
    assert documents_of(again[0]) == documents_of(split_texts(prefix, draws=2, cache_root=tmp_path / "d", label="v")[0])
    assert documents_of(other_seed[0]) != documents_of(again[0])


def test_independent_chunks_are_dealt_as_documents_of_their_own(tmp_path):
    one = np.arange(5000) % 900 + 100
    prefix = write_prefix(tmp_path / "long", [one])

    texts = split_texts(prefix, draws=2, chunk_tokens=100, cache_root=tmp_path / "cache", label="v")

    assert [len(documents_of(text)) for text in texts] == [26, 12, 12]
    assert sorted(np.concatenate([np.concatenate(documents_of(t)) for t in texts]).tolist()) == sorted(one.tolist())


def test_a_corpus_with_fewer_documents_than_texts_is_refused_naming_it(tmp_path):
    prefix = write_prefix(tmp_path / "two", [np.arange(10) + 100, np.arange(10) + 200])

    with pytest.raises(CorpusError, match=r"^data\.non_english\.valid holds 2 document\(s\) .* 3 disjoint texts"):
        split_texts(prefix, draws=2, cache_root=tmp_path / "cache", label="data.non_english.valid")


def test_dealing_is_by_count_two_of_every_four_to_the_pool():
    texts = dealt(10, draws=2, seed=0)

    assert [len(text) for text in texts] == [6, 2, 2]
    assert sorted(np.concatenate(texts).tolist()) == list(range(10))


def side(name: str, documents: int, tokens: int = 500) -> TextSide:
    return TextSide(name=name, corpora=("data.domain.valid",), tokens=(tokens,) * documents,
                    weights=(1 / documents,) * documents)  # fmt: skip


def test_a_text_with_too_few_documents_is_refused_with_the_figure_and_the_ways_to_have_more():
    sides = [side("the pool's domain side", 30), side("draw 1's domain side", MIN_DOCUMENTS - 1)]

    with pytest.raises(CorpusError) as refused:
        check_texts(sides, draws=2, chunked=False)

    message = str(refused.value)
    assert f"draw 1's domain side holds {MIN_DOCUMENTS - 1} (data.domain.valid)" in message
    assert f"at least {MIN_DOCUMENTS} per side" in message
    assert "add held-out documents" in message and "search.confirmation.candidates" in message
    assert "independent_chunks" in message
    check_texts([side("the pool's domain side", MIN_DOCUMENTS)], draws=0, chunked=False)  # enough: no refusal


def test_one_long_document_among_short_ones_is_warned_of(capsys):
    lengths = (100_000,) + (50,) * 20
    total = sum(lengths)
    skewed = TextSide(name="the pool's domain side", corpora=("data.domain.valid",), tokens=lengths,
                      weights=tuple(n / total for n in lengths))  # fmt: skip

    check_texts([skewed], draws=0, chunked=False)

    warning = capsys.readouterr().err
    assert "the pool's domain side holds 21 documents but their lengths weigh as 1.0 equal ones" in warning
    assert "its longest is 100,000 of 101,000 tokens" in warning
    assert "add held-out documents of the kind to data.domain.valid" in warning and "independent_chunks" in warning
    check_texts([skewed], draws=0, chunked=True)  # already chunked: cutting is not offered again
    assert "independent_chunks" not in capsys.readouterr().err
