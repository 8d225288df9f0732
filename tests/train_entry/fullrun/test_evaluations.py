"""The full run's evaluations read from scripted log lines in Megatron-LM's format: the base at iteration 0, then
domain_gain and forgetting in the proxies' definitions (the general side blended with non-English at its share), and
the watch tripping on the second overshoot in a row."""

from __future__ import annotations

import pytest

from tests.train_entry.fullrun.predictions import straight
from train_entry.fullrun.evaluations import Evaluations, WatchConfig
from train_entry.megatron.megatron_log import parse_validation, validation_line
from train_entry.trial_config import BaseLosses

PREDICTION = straight(4000, end=0.01, upper_start=0.01, upper_end=0.02)
CONFIG = WatchConfig(
    sets=["general", "domain", "non_english"], non_english_share=0.1, tokens_per_iteration=100, prediction=PREDICTION
)
# As Megatron-LM core_v0.16.1 prints them (evaluate_and_print_results), base evaluation from --skip-train first.
LOG = """\
 validation-0 loss at iteration 0 on validation set | lm loss value: 2.000000E+00 | lm loss PPL: 7.389056E+00 | 
 validation-1 loss at iteration 0 on validation set | lm loss value: 3.000000E+00 | lm loss PPL: 2.008554E+01 | 
 validation-2 loss at iteration 0 on validation set | lm loss value: 4.000000E+00 | lm loss PPL: 5.459815E+01 | 
 [2026-11-28 10:00:00] iteration       10/      40 | consumed samples:          640 | lm loss: 2.500000E+00 |
 validation-0 loss at iteration 10 | lm loss value: 2.020000E+00 | lm loss PPL: 7.538325E+00 | 
 validation-1 loss at iteration 10 | lm loss value: 2.700000E+00 | lm loss PPL: 1.487973E+01 | 
 validation-2 loss at iteration 10 | lm loss value: 4.040000E+00 | lm loss PPL: 5.682633E+01 | 
 validation-0 loss at iteration 20 | lm loss value: 2.100000E+00 | lm loss PPL: 8.166170E+00 | 
 validation-1 loss at iteration 20 | lm loss value: 2.600000E+00 | lm loss PPL: 1.346374E+01 | 
 validation-2 loss at iteration 20 | lm loss value: 4.200000E+00 | lm loss PPL: 6.668633E+01 | 
 validation-2 loss at iteration 30 | lm loss value: 4.200000E+00 | lm loss PPL: 6.668633E+01 | 
 validation-0 loss at iteration 30 | lm loss value: 2.100000E+00 | lm loss PPL: 8.166170E+00 | 
 validation-1 loss at iteration 30 | lm loss value: 2.500000E+00 | lm loss PPL: 1.218249E+01 | 
"""


def read(log: str, config: WatchConfig = CONFIG):
    evaluations = Evaluations(config)
    return evaluations, [found for line in log.splitlines() if (found := evaluations.read(line)) is not None]


def test_the_base_is_iteration_0_and_general_blends_non_english_at_its_share():
    evaluations, (base, *_) = read(LOG)
    assert base == BaseLosses(domain_loss=3.0, general_loss=0.9 * 2.0 + 0.1 * 4.0)
    first = evaluations.watched[0].metrics
    assert (first.step, first.tokens_seen) == (10, 1000)
    assert first.domain_gain == pytest.approx(1 - 2.7 / 3.0)
    assert first.forgetting == pytest.approx((0.9 * 2.02 + 0.1 * 4.04) / 2.2 - 1)  # 1 %


def test_the_watch_trips_at_the_second_evaluation_in_a_row_over_the_bound():
    evaluations, _ = read(LOG)
    forgetting = [round(e.metrics.forgetting, 4) for e in evaluations.watched]
    assert forgetting == [0.01, 0.05, 0.05]  # the bound at 1000-3000 tokens is 0.0125-0.0175
    assert [e.tripped for e in evaluations.watched] == [False, False, True]
    assert evaluations.watched[-1].line().startswith("WARNING: iteration 30, 3,000 tokens: forgetting 0.0500")


def test_evaluations_before_the_base_are_not_measured_and_other_lines_are_ignored():
    later = "\n".join(LOG.splitlines()[4:])  # no iteration-0 evaluation
    evaluations, found = read(later)
    assert found == [] and evaluations.watched == []


def test_without_a_prediction_it_measures_but_never_trips():
    config = CONFIG.model_copy(update={"prediction": None})
    evaluations, _ = read(LOG, config)
    assert [e.upper for e in evaluations.watched] == [None] * 3 and not any(e.tripped for e in evaluations.watched)


def test_a_line_written_for_the_rehearsal_reads_back_as_megatron_lms():
    line = validation_line(2, 30, 4.2)
    assert line == LOG.splitlines()[-3]
    assert parse_validation(" validation-1 loss at iteration 5 | lm loss value: NAN | lm loss PPL: NAN | ").loss != 0


@pytest.mark.parametrize(
    ("sets", "share"), [(["general", "general"], 0.0), (["general", "domain", "non_english"], 0.0), (["domain"], 0.0)]
)
def test_a_watch_config_without_one_general_and_one_domain_set_or_with_a_stray_share_is_refused(sets, share):
    with pytest.raises(ValueError):
        WatchConfig(sets=sets, non_english_share=share, tokens_per_iteration=1, prediction=None)
