"""A validation text as windows inside documents: every token but a document's first scored once, each window's
loss given to its document, the general side blending its corpora at their shares, and the interim windows spread
over as many documents as there are."""

from __future__ import annotations

import numpy as np
import pytest
from test_draws import write_prefix

from train_entry.data.windows import IGNORE, read_side, read_text
from train_entry.trial_config import CorpusPrefixes


def test_every_token_but_a_documents_first_is_scored_once_in_windows_of_its_own_document(tmp_path):
    documents = [np.arange(100, 100 + n) for n in (1, 2, 9, 10, 11, 25)]
    side = read_side([write_prefix(tmp_path / "d", documents)], (1.0,), seq_len=4)

    assert side.documents == 5  # the one-token document scores nothing
    assert side.scored.sum() == sum(n - 1 for n in (2, 9, 10, 11, 25))
    # window j of a document reads tokens 4j .. 4j + 3 and is scored on the next ones
    first = side.tokens[side.document == 1]
    assert first[0].tolist() == [100, 101, 102, 103] and side.labels[side.document == 1][0].tolist() == [
        101,
        102,
        103,
        104,
    ]
    assert side.labels[side.document == 2][-1].tolist() == [109, IGNORE, IGNORE, IGNORE]  # padded past its end
    assert np.bincount(side.document).tolist() == [1, 2, 3, 3, 6]  # ceil((n - 1) / 4) windows, none shared


def test_a_sides_loss_weighs_each_corpus_at_its_share_and_each_document_by_its_tokens(tmp_path):
    general = write_prefix(tmp_path / "g", [np.arange(100, 121), np.arange(200, 241)])  # 20 and 40 scored
    other = write_prefix(tmp_path / "n", [np.arange(300, 311)])  # 10 scored
    text = read_text(CorpusPrefixes(general=general, domain=general, non_english=other), 0.25, seq_len=8)

    sums = text.general.scored * np.where(text.general.corpus[text.general.document] == 0, 2.0, 4.0)
    losses = text.general.losses(sums)

    assert losses.tokens == [20, 40, 10]
    assert losses.weights == pytest.approx([0.75 / 3, 0.75 * 2 / 3, 0.25])
    assert losses.loss == pytest.approx(0.75 * 2.0 + 0.25 * 4.0)


def test_the_interim_windows_take_one_window_of_each_document_before_a_second_of_any(tmp_path):
    documents = [np.arange(1000 * k, 1000 * k + 50) for k in range(1, 11)]  # 10 documents of 7 windows each
    text = read_text(CorpusPrefixes(general=write_prefix(tmp_path / "g", documents), domain=write_prefix(tmp_path / "d", documents)), 0.0, seq_len=8)  # fmt: skip

    few, more = text.interim(6), text.interim(14)

    assert few.domain.documents == 6 and len(few.domain.document) == 6
    assert more.domain.documents == 10 and np.bincount(more.domain.document).tolist().count(2) == 4
    assert (few.domain.tokens[:, 0] % 1000 == 0).all()  # each a document's first window
    pool = {tuple(window) for window in text.domain.tokens.tolist()}
    assert all(tuple(window) in pool for window in more.domain.tokens.tolist())  # a subset of the pool's windows
