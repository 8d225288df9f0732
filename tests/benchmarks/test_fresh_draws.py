"""benchmarks/fresh_draws.py: each fresh seed of the decision-quality benchmark is measured on a validation draw past
the sweeps' own (cycled where the text holds fewer), and the benchmark refuses to go on when its draws are not the
text the sweeps' trials were measured on. On the tiny spec's real draws, read back from real trial configs."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from fresh_draws import DrawMismatch, assign, mismatches, settle, text_of, texts_used

from sweep.files.rundir import RunDir
from sweep.run.prepare import Prepared, prepare
from sweep.run.sample_size import validation_draws
from sweep.spec.spec import load_spec
from tests.conftest import TINY_SPEC, write_spec
from train_entry.file_format import TRIAL_CONFIG
from train_entry.mix import MixRatio
from train_entry.trial_config import CorpusPrefixes

SEEDS = (90_001, 90_002, 90_003)


def test_each_fresh_seed_gets_a_draw_past_the_sweeps_and_fewer_stable_draws_are_cycled_and_said():
    enough = assign(3, 3, SEEDS)
    assert enough.by_seed == {90_001: 3, 90_002: 4, 90_003: 5} and not enough.cycled
    assert "seed 90003 on draw 5" in enough.describe() and "re-use" not in enough.describe()

    short = assign(3, 2, SEEDS)
    assert short.by_seed == {90_001: 3, 90_002: 4, 90_003: 3} and short.cycled
    assert "holds only 2 stable draw(s)" in short.describe() and "1 fresh seed(s) re-use" in short.describe()
    assert min(short.by_seed.values()) >= 3  # never a sweep's draw

    with pytest.raises(ValueError, match="at least one validation draw past"):
        assign(3, 0, SEEDS)


@pytest.fixture(scope="module")
def spec(tiny_corpora):
    """The tiny spec with one confirmation candidate: a sweep of it measures on draws 0 and 1."""
    search = {**TINY_SPEC["search"], "confirmation": {"seeds": 1, "candidates": 1}}
    return load_spec(write_spec(tiny_corpora, "fresh-draws.yaml", search=search))


def _sweep(prepared: Prepared, folder: Path, draws: list[int]) -> RunDir:
    """A run directory whose trials' trial_config.json say they were measured on `draws`, as a sweep writes them."""
    run = RunDir(folder)
    for number, draw in enumerate(draws):
        config = prepared.trial_config(
            lr_fraction=0.1, mix=MixRatio(1, 1), output_dir=run.trial(number), valid_draw=draw
        )
        run.trial(number).mkdir(parents=True)
        run.trial_config(number).write_text(TRIAL_CONFIG.dumps(config))
    return run


def test_a_sweep_measured_on_the_benchmarks_draws_is_accepted_and_each_fresh_seed_gets_new_text(spec, tmp_path):
    own = prepare(spec)
    used = {"default-seed0": texts_used(_sweep(own, tmp_path / "sweep", [0, 0, 1]))}

    fresh = settle(lambda extra: prepare(spec, extra_draws=extra), used, validation_draws(spec), SEEDS)

    assert fresh.by_seed == {90_001: 2, 90_002: 3, 90_003: 4}  # the tiny text holds three draws past the two
    extended = prepare(spec, extra_draws=fresh.stable_extra)
    sweeps_text = {text_of(p) for p in own.valid_draws}
    assert all(text_of(extended.valid_draws[draw]) not in sweeps_text for draw in fresh.by_seed.values())


def test_the_same_text_at_another_path_is_the_same_draw(spec, tmp_path):
    own = prepare(spec)
    draw = own.valid_draws[0]
    copied = {}
    for corpus in ("general", "domain", "non_english"):
        prefix = getattr(draw, corpus)
        if prefix is None:
            continue
        copied[corpus] = str(tmp_path / corpus)
        for suffix in (".idx", ".bin"):
            shutil.copy(f"{prefix}{suffix}", f"{copied[corpus]}{suffix}")  # new path, new mtime, same bytes
    assert text_of(CorpusPrefixes(**copied)) == text_of(draw)


def test_draws_that_are_not_the_sweeps_text_are_refused_naming_the_run_and_the_draw(spec, tmp_path):
    own = prepare(spec)
    used = {"default-seed1": texts_used(_sweep(own, tmp_path / "sweep", [0, 1]))}
    shifted = own.valid_draws[1:] + own.valid_draws[:1]  # draw 0 holds what was draw 1: other text

    assert mismatches(used, shifted) == [
        "default-seed1's trials were measured on another text as validation draw 0",
        "default-seed1's trials were measured on another text as validation draw 1",
    ]
    assert mismatches(used, own.valid_draws) == []

    class Shifted:
        valid_draws = shifted

    with pytest.raises(DrawMismatch, match="default-seed1's trials were measured on another text as validation draw 0"):
        settle(lambda extra: Shifted(), used, validation_draws(spec), SEEDS)


def test_a_trial_config_that_cannot_be_read_back_is_refused_naming_the_file(spec, tmp_path):
    run = _sweep(prepare(spec), tmp_path / "sweep", [0])
    run.trial_config(0).write_text('{"format_version": 2, "lr_fraction": "high"}')
    with pytest.raises(DrawMismatch, match=f"{run.trial_config(0)}: the text its trial was measured on cannot be read"):
        texts_used(run)
