"""benchmarks/fresh_text.py: the fresh text of the decision-quality benchmark is held out by work, so no chunk of a
novel, article or module the sweeps read is in it, and the same works every time."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from fresh_text import FRESH_SHARE, split_corpus, work_of

DATA = Path(__file__).resolve().parents[2] / "data"


def works(path: Path) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {work_of(json.loads(line).get("id"), number) for number, line in enumerate(lines)}


def test_a_work_is_read_off_each_bundled_corpus_s_ids():
    assert work_of("eltec-eng/ENG18411_Tupper/body/d1/c2", 0) == "eltec-eng/ENG18411_Tupper"
    assert work_of("enwiki/Apollo 8/part3", 0) == "enwiki/Apollo 8"
    assert work_of("cpython/fractions.py#3", 0) == "cpython/fractions.py"
    assert work_of("wikitext2/valid/004/Meridian , Mississippi", 0) == "wikitext2/valid/004/Meridian , Mississippi"
    assert work_of("cpqa/B00000J00M", 0) == "cpqa/B00000J00M" and work_of(None, 7) == "line 7"


def test_the_general_validation_text_is_split_by_work_a_third_fresh_the_same_every_time(tmp_path):
    source = DATA / "general_en" / "valid.jsonl"

    split = split_corpus(source, tmp_path / "a")
    again = split_corpus(source, tmp_path / "b")

    sweep, fresh = works(split.sweep), works(split.fresh)
    assert not sweep & fresh and sweep | fresh == works(source)  # no novel, article or speech on both sides
    assert split.works == (len(sweep), len(fresh)) and len(fresh) == round(FRESH_SHARE * (len(sweep) + len(fresh)))
    assert sum(split.documents) == len(source.read_text().splitlines())
    assert split.fresh.read_bytes() == again.fresh.read_bytes() and split.sweep.read_bytes() == again.sweep.read_bytes()
