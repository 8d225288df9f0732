"""The fresh text of benchmarks/decision_quality.py: each validation corpus split, by work, into the text its sweeps
may see and text none of them ever reads.

A sweep measures its search on the validation pool and confirms on draws of the rest (train_entry.data.draws): it
reads every validation document it is given. So the benchmark gives its sweeps a part of each validation corpus
and keeps the other part for its fresh re-runs, which measure the text population the sweeps' figures are meant to
estimate. The split is by *work*, not by document: the bundled corpora cut novels, articles, speeches and modules
into several documents (data/README.md), and chunks of one novel on both sides would make the fresh text half
familiar. A work is read off each document's `id` (work_of); a corpus without ids splits by document.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FRESH_SHARE = 1 / 3
"""Of the works of each validation corpus, the fresh text's: the sweeps keep two thirds, enough for their pool and
two confirmation draws of at least 10 documents each on every bundled corpus (the 60 WikiText-2 articles, the 64
Python modules), and the fresh third is still 20 works or more on the domain side. (The bundled general English
validation text is 16 works, so its fresh third is 5 of them: BENCHMARKS.md says what that costs.)"""
SPLIT_SEED = 49
"""Seeds the shuffle of the works: fixed, so every benchmark run over a corpus holds out the same fresh text."""


def work_of(document_id: str | None, line: int) -> str:
    """The work a bundled document belongs to: its id up to a `#` part number (Python modules), then its first two
    path parts ("eltec-eng/ENG18411_Tupper", "enwiki/Apollo 8", "cpqa/B00000J00M"), but a WikiText-2 id whole (one
    article a document, its number in the path's third part). A document without an id is a work of its own."""
    if not document_id:
        return f"line {line}"
    stem = document_id.split("#", 1)[0]
    return stem if stem.startswith("wikitext2/") else "/".join(stem.split("/")[:2])


@dataclass(frozen=True)
class Split:
    """Where one validation corpus's two parts were written, and what each holds."""

    sweep: Path
    fresh: Path
    works: tuple[int, int]
    """(the sweeps', the fresh text's) works."""
    documents: tuple[int, int]


def split_corpus(source: Path, folder: Path, *, fresh_share: float = FRESH_SHARE, seed: int = SPLIT_SEED) -> Split:
    """Writes folder/sweep.jsonl and folder/fresh.jsonl from the JSONL corpus `source`: its works in a seeded order,
    the first round(fresh_share x works) fresh, the rest the sweeps'; each line kept as it is."""
    lines = [line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    works = [work_of(json.loads(line).get("id"), number) for number, line in enumerate(lines)]
    names = list(dict.fromkeys(works))
    order = np.random.default_rng(seed).permutation(len(names))
    fresh = {names[k] for k in order[: max(1, round(fresh_share * len(names)))]}
    folder.mkdir(parents=True, exist_ok=True)
    parts = {"sweep": [], "fresh": []}
    for line, work in zip(lines, works):
        parts["fresh" if work in fresh else "sweep"].append(line)
    for name, kept in parts.items():
        (folder / f"{name}.jsonl").write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")
    return Split(
        sweep=folder / "sweep.jsonl",
        fresh=folder / "fresh.jsonl",
        works=(len(names) - len(fresh), len(fresh)),
        documents=(len(parts["sweep"]), len(parts["fresh"])),
    )


def describe(splits: dict[str, Split]) -> Iterable[str]:
    """One line per corpus for the benchmark's output, computed from the splits."""
    for name, split in splits.items():
        yield (
            f"data.{name}.valid: the sweeps' {split.documents[0]} documents of {split.works[0]} works, fresh text "
            f"{split.documents[1]} documents of {split.works[1]} works no sweep reads"
        )
