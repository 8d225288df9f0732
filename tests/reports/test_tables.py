"""What `sweep base`, `sweep trial` and a sweep's outcome print: corpora with their skipped lines, the base
manifest, the pick."""

from __future__ import annotations

import math
import re

import pytest
from rich.console import Console

from cli import main
from reports.decision import pick_lines
from reports.tables import metrics_table, print_corpora, print_manifest, print_outcome, trials_table
from sweep.choice.observed import select
from sweep.choice.pick import make_pick
from sweep.space import SearchSpace
from sweep.study.config import PickConfig
from tests.sweep.scripted import trial_row
from train_entry.data.corpus import CorpusStats
from train_entry.mix import MixRatio
from train_entry.trial_config import Metrics


def test_sweep_base_prints_corpora_skips_and_the_manifest(write_tiny_spec, capsys):
    messy = write_tiny_spec().parent / "messy.jsonl"
    good = (write_tiny_spec().parent / "corpora" / "ecommerce" / "train.jsonl").read_bytes()
    messy.write_bytes(good + b"\xff\xfe\n{broken\n" + b'{"text": "   "}\n')
    path = write_tiny_spec(
        "messy.yaml", data={"domain": {"train": "messy.jsonl", "valid": "corpora/ecommerce/valid.jsonl"}}
    )

    assert main(["base", str(path)]) == 0
    out = capsys.readouterr().out
    domain_row = next(line for line in out.splitlines() if "domain.train" in line)
    cells = [cell.strip() for cell in re.split(r"\s{2,}", domain_row.strip())]
    assert cells[0] == "domain.train" and cells[3] == "whole", cells
    assert cells[4] == "1 not UTF-8, 1 malformed, 1 empty", cells
    assert "final.general_loss" in out and "builtin:tiny-llama" in out


def test_the_corpus_table_says_how_much_of_each_corpus_its_sample_covers():
    console = Console(record=True, width=200)
    stats = {
        "domain.train": CorpusStats(documents=9_000, tokens=4_000_000, corpus_bytes=50 * 10**9, sampled_bytes=10**7),
        "domain.valid": CorpusStats(documents=40, tokens=28_575, corpus_bytes=60_412, sampled_bytes=60_412),
    }

    print_corpora(stats, console)

    rows = {line.split()[0]: line for line in console.export_text().splitlines() if line.lstrip().startswith("domain")}
    assert "0.02% of 50.0 GB" in rows["domain.train"] and "4,000,000" in rows["domain.train"]
    assert "whole" in rows["domain.valid"]


def test_the_corpus_table_reads_whole_in_an_80_column_terminal():
    """With a column for each reason a document was skipped, rich shrank the names to "domain…" and the token
    counts to "3,005,…" at 80 columns."""
    stats = {
        f"non_english.{split}": CorpusStats(
            documents=1_234_567,
            tokens=987_654_321,
            corpus_bytes=5 * 10**12,
            sampled_bytes=10**9,
            skipped_non_utf8=12,
            skipped_malformed=3_456,
            skipped_empty=7,
            skipped_oversized=1,
        )
        for split in ("train", "valid")
    }
    console = Console(record=True, width=80)
    print_corpora(stats, console)
    text = console.export_text()
    assert "…" not in text and max(len(line.rstrip()) for line in text.splitlines()) <= 80
    rows = [line for line in text.splitlines() if line.lstrip().startswith("non_english")]
    assert [row.split()[:7] for row in rows] == [
        ["non_english.train", "1,234,567", "987,654,321", "0.02%", "of", "5.0", "TB"],
        ["non_english.valid", "1,234,567", "987,654,321", "0.02%", "of", "5.0", "TB"],
    ]
    train = text.split("non_english.train")[1].split("non_english.valid")[0]  # its row, the skipped column wrapped
    assert " ".join(train.split()[6:]) == "12 not UTF-8, 3,456 malformed, 7 empty, 1 oversized"


def test_the_pick_is_printed_with_its_intervals_its_reason_and_the_tried_points_it_cannot_be_told_from():
    lrs, mixes = (0.05, 0.08, 0.12, 0.2), ("4:1", "2:1", "1:1")
    rows = []
    for lr in lrs:
        for mix in mixes:
            share = MixRatio.parse(mix).domain_share
            rows.append(trial_row(len(rows), lr, mix, 0.1 + 0.05 * math.log(lr / 0.05) + 0.1 * share, 0.1 * lr * share))
    space = SearchSpace.model_validate({"lr_fraction": {"low": 0.05, "high": 0.2, "log": True}, "mix": list(mixes)})
    pick = make_pick(rows, space=space, budget=0.01, config=PickConfig(), observed=None)

    lines = pick_lines(pick)
    assert lines[0].startswith(f"pick (surrogate): lr_fraction {pick.point.lr_fraction:.4g}, mix {pick.point.mix}")
    assert "(90 % intervals, the text included); P(a re-run within the budget)" in lines[1]
    assert lines[2] == f"  why: {pick.reason}"
    assert "indistinguishable" in lines[3] or "measurably less" in lines[3]
    assert pick_lines(pick.model_copy(update={"source": None, "point": None})) == [f"pick: none ({pick.reason})"]


@pytest.mark.parametrize("width", [80, 100])
def test_a_long_pruning_reason_leaves_every_column_whole_and_is_written_below_the_table(width):
    """rich shrank every column of the too-wide table: numbers, statuses and mixes became "…", even at 100."""
    from sweep.study.record import Status

    reason = "forgetting guard at step 50: forgetting 0.0216 now, predicted 0.0171 at the end, over budget 0.02 " * 2
    rows = [
        trial_row(number, 0.1234, mix, 0.2, 0.03, status=Status.PRUNED, seed=0).model_copy(
            update={"reason": reason, "wall_seconds": 1234.0}  # a column as wide as its header
        )
        for number, mix in ((7, "1:4"), (18, "4:1"))
    ] + [trial_row(25, 0.05, "1:1", 0.1, 0.0, seed=0)]
    space = SearchSpace.model_validate({"lr_fraction": {"low": 0.05, "high": 0.2}, "mix": ["4:1", "1:1", "1:4"]})
    console = Console(width=width, record=True)
    print_outcome(console, select(rows, forgetting_budget=0.02, space=space), rows, title="sweep")
    text = console.export_text()
    lines = text.splitlines()
    shown = [line.split() for line in lines if line.split()[:1] in (["7"], ["18"], ["25"])]
    assert [cells[:3] for cells in shown] == [
        ["7", "PRUNED", "0.1234"],
        ["18", "PRUNED", "0.1234"],
        ["25", "*", "COMPLETED"],
    ]
    assert [mix in cells for cells, mix in zip(shown, ["1:4", "4:1", "1:1"])] == [True] * 3
    assert "…" not in text and "domain_gain" in text and "forgetting" in text
    below = " ".join(line.strip() for line in lines if line.strip()).split("#7: ")[1]
    assert below.startswith(reason.strip()[:60])  # the reason whole, wrapped below the table
    assert max(len(line.rstrip()) for line in lines) <= width
    # Uncropped, a table wider than the terminal would show here: a console cuts it at its edge (a sweep's table
    # at 80 columns lost its last columns mid-number, 100 steps reading "10"); the optional columns must go instead.
    uncropped = Console(width=width, record=True)
    uncropped.print(trials_table(rows, best=None, title="sweep"), crop=False)
    assert max(len(line.rstrip()) for line in uncropped.export_text().splitlines()) <= width


def test_a_long_value_in_the_base_manifest_wraps_whole_in_an_80_column_terminal():
    path = "/root/.cache/cpt-sweep/bases/tiny-llama-3713a3339efaaf6591cc0123456789abcdef0123456789"
    console = Console(record=True, width=80)
    print_manifest({"model": "builtin:tiny-llama", "path": path}, console)
    text = console.export_text()
    assert "…" not in text
    assert path in "".join(line.split("│")[2].strip() for line in text.splitlines() if line.count("│") == 3)


def test_a_trials_evaluations_read_whole_in_an_80_column_terminal():
    """rich cut the headers to "domain_ga…" and "forgetti…" at 80 columns, and would cut a large token count."""
    history = [
        Metrics(
            step=step,
            tokens_seen=step * 32_768,
            domain_loss=4.8,
            general_loss=4.35,
            domain_gain=0.0331,
            forgetting=-0.0028,
            train_loss=4.57,
            lr=3e-4,
        )
        for step in (200, 30_000)
    ]
    console = Console(record=True, width=80)
    console.print(metrics_table(history, title="proxy trial lr0.1_mix1-1: peak LR 0.0003, domain_share 0.50"))
    text = console.export_text()
    assert "…" not in text and max(len(line.rstrip()) for line in text.splitlines()) <= 80
    last = next(line.split() for line in text.splitlines() if line.split()[:1] == ["30000"])
    assert last == ["30000", "983,040,000", "4.5700", "4.8000", "4.3500", "+0.0331", "-0.0028"]


def test_the_trials_table_names_each_rows_text_and_the_spread_is_said_per_text():
    """`sweep status` and `sweep run`: the text column, and one spread line per text, never one pooled over the pool
    and a confirmation draw (issue 49's 0.0172)."""
    rows = [
        trial_row(1, 0.11, "4:1", 0.1970, 0.0064, seed=0),
        trial_row(7, 0.11, "4:1", 0.2000, 0.0076, seed=1, replicate_of=1),
        trial_row(8, 0.11, "4:1", 0.2300, 0.0050, seed=2, confirms=0),
        trial_row(9, 0.11, "4:1", 0.2330, 0.0052, seed=3, confirms=0),
    ]
    space = SearchSpace.model_validate({"lr_fraction": {"low": 0.05, "high": 0.2}, "mix": ["4:1", "1:1", "1:4"]})
    console = Console(width=200, record=True)

    print_outcome(console, select(rows, forgetting_budget=0.02, space=space), rows, title="sweep")

    text = console.export_text()
    table = {line.split()[0]: line.split() for line in text.splitlines() if line.split()[:1] in (["1"], ["8"])}
    (header,) = [line for line in text.splitlines() if "lr_fraction" in line and "domain_gain" in line][:1]
    assert "text" in header.split() and "pool" in table["1"] and "draw" in table["8"]
    spreads = [line for line in text.splitlines() if line.startswith("seed-to-seed spread")]
    assert [line.split(" (")[0] for line in spreads] == [
        "seed-to-seed spread on the pool",
        "seed-to-seed spread on draw 1",
    ]
    assert "domain_gain 0.0021" in spreads[0] and "domain_gain 0.0021" in spreads[1]
