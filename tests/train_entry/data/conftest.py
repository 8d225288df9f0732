"""Shared inputs of the data-pipeline tests: a small BPE and small generated corpora."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from train_entry.data.corpus import Corpus
from train_entry.data.tokenizer import train_bpe

REPO = Path(__file__).resolve().parents[3]
GENERAL_EN = REPO / "data" / "general_en" / "train.jsonl"

JsonlWriter = Callable[[Path, list[str]], Path]
CorpusGenerator = Callable[..., Path]


def _write_jsonl(path: Path, texts: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"text": text}, ensure_ascii=False) + "\n" for text in texts), encoding="utf-8")
    return path


@pytest.fixture
def write_jsonl() -> JsonlWriter:
    """write_jsonl(path, texts): one {"text": ...} object per line."""
    return _write_jsonl


@pytest.fixture(scope="session")
def generate_corpus() -> CorpusGenerator:
    """generate_corpus(path, words, documents=, seed=): documents of 20-80 words drawn from `words`."""

    def generate(path: Path, words: Sequence[str], *, documents: int, seed: int) -> Path:
        rng = random.Random(seed)
        texts = [" ".join(rng.choices(words, k=rng.randint(20, 80))) for _ in range(documents)]
        return _write_jsonl(path, texts)

    return generate


@pytest.fixture(scope="session")
def general_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first ~200 KB (whole lines) of the bundled English general corpus."""
    lines, size = [], 0
    with GENERAL_EN.open("rb") as stream:
        for line in stream:
            lines.append(line)
            size += len(line)
            if size > 200_000:
                break
    path = tmp_path_factory.mktemp("corpora") / "general_sample.jsonl"
    path.write_bytes(b"".join(lines))
    return path


@pytest.fixture(scope="session")
def tokenizer_dir(general_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 512-token BPE of the general sample: small enough to train in about a second."""
    return train_bpe([Corpus.of(general_sample)], 512, tmp_path_factory.mktemp("bpe_cache"))
