"""The entry's own evaluations: each set's loss in Megatron-LM's line format, read back by the watch's parser as a
pretrain_gpt.py job's would be, and domain_gain and forgetting against the base's losses at iteration 0."""

from __future__ import annotations

import pytest

from train_entry.fullrun.evaluations import Evaluations, WatchConfig
from train_entry.megatron.config import Data
from train_entry.megatron.evaluation import EntryEvaluations
from train_entry.trial_config import BaseLosses, domain_gain, forgetting

DATA = Data.model_validate(
    {
        "blend": [{"weight": 1.0, "prefix": "/data/general_text_document"}],
        "tokenizer": "/models/base",
        "valid": [
            {"side": "general", "prefix": "/data/general_valid"},
            {"side": "domain", "prefix": "/data/domain_valid"},
            {"side": "non_english", "prefix": "/data/non_english_valid"},
        ],
        "non_english_share": 0.2,
    }
)
TOKENS_PER_ITERATION = 1000
EVALUATIONS = {0: [2.0, 3.0, 4.0], 10: [2.1, 2.7, 4.4], 20: [2.2, 2.4, 4.0]}


def _evaluated(evaluations=EVALUATIONS) -> tuple[EntryEvaluations, list[str]]:
    lines: list[str] = []
    entry = EntryEvaluations(DATA, tokens_per_iteration=TOKENS_PER_ITERATION, log=lines.append)
    for step, losses in evaluations.items():
        assert entry.evaluate(step, losses) is False  # the entry's own never stops a run
    return entry, lines


def test_the_base_is_iteration_0_and_each_evaluation_is_measured_against_it():
    entry, lines = _evaluated()
    assert entry.base == BaseLosses(domain_loss=3.0, general_loss=0.8 * 2.0 + 0.2 * 4.0)
    last = entry.measured[-1]
    assert (last.step, last.tokens_seen) == (20, 20_000)
    assert last.domain_gain == domain_gain(2.4, 3.0) == pytest.approx(0.2)
    assert last.forgetting == pytest.approx(forgetting(0.8 * 2.2 + 0.2 * 4.0, 0.8 * 2.0 + 0.2 * 4.0), rel=1e-12)
    assert lines[-1] == f"iteration 20, 20,000 tokens: domain_gain 0.2000, forgetting {2.56 / 2.4 - 1:.4f}"


def test_its_lines_are_megatron_lms_and_the_watch_reads_the_same_figures():
    entry, lines = _evaluated()
    # megatron/training/training.py (core_v0.16.1), evaluate_and_print_results: f' validation{suffix} loss at
    # {prefix} | ' then '{} value: {:.6E} | ' and '{} PPL: {:.6E} | ' per loss key, suffix "-<index>".
    assert lines[0] == " validation-0 loss at iteration 0 | lm loss value: 2.000000E+00 | lm loss PPL: 7.389056E+00 | "
    watch = Evaluations(WatchConfig(sets=["general", "domain", "non_english"], non_english_share=0.2,
                                    tokens_per_iteration=TOKENS_PER_ITERATION, prediction=None))  # fmt: skip
    for line in lines:
        watch.read(line)
    assert watch.base == entry.base
    assert [watched.metrics for watched in watch.watched] == entry.measured


def test_a_resumed_run_measures_against_the_base_its_checkpoint_kept():
    entry, _ = _evaluated({0: EVALUATIONS[0]})
    resumed = EntryEvaluations(DATA, tokens_per_iteration=TOKENS_PER_ITERATION, log=[].append)
    resumed.restore(entry.state())
    resumed.evaluate(20, EVALUATIONS[20])
    assert resumed.measured[0].domain_gain == pytest.approx(0.2)


def test_without_a_base_nothing_is_measured_and_the_log_says_so():
    entry, lines = _evaluated({10: EVALUATIONS[10]})
    assert entry.base is None and entry.measured == []
    assert lines[-1] == "iteration 10: no base losses to measure domain_gain and forgetting against"
