"""A trial's result keeps its training time, without its evaluations and start-up, and the tokens that time trained
on: what a trial's MFU is computed from; and on a GPU its peak memory (tests/train_entry/test_cuda.py)."""

from __future__ import annotations

import time

import pytest
import torch

from sweep.run.prepare import Prepared, prepare
from sweep.spec.spec import load_spec
from train_entry.file_format import TRIAL_RESULT
from train_entry.mix import MixRatio
from train_entry.proxy import run_trial
from train_entry.trial_config import RESULT_JSON, TrialResult
from train_entry.usage import UsageMeter

PAUSE_S = 0.5
"""How long each evaluation's report takes below: far above the timer's error, short for a test."""


@pytest.fixture(scope="module")
def prepared(tiny_spec_path) -> Prepared:
    return prepare(load_spec(tiny_spec_path))


def test_a_trial_keeps_its_training_time_without_its_evaluations_and_its_start(prepared, tmp_path):
    config = prepared.trial_config(lr_fraction=0.1, mix=MixRatio(1, 1), output_dir=tmp_path)
    result = run_trial(config, lambda metrics: time.sleep(PAUSE_S))
    written = TRIAL_RESULT.read(tmp_path / RESULT_JSON, TrialResult)
    assert written == result
    usage = result.usage
    assert (
        usage.train_tokens == result.tokens_seen == config.proxy.steps * config.proxy.batch_size * config.proxy.seq_len
    )
    evaluations = len(result.history)
    assert evaluations == config.proxy.steps // config.proxy.eval_interval == 2
    # Each evaluation's report paused PAUSE_S: none of it is training time, nor is the trial's start.
    assert 0 < usage.train_seconds < result.wall_seconds - evaluations * PAUSE_S
    assert usage.peak_memory_gb is None  # no GPU: the machine's memory, not a card's


def test_the_time_of_the_calls_set_aside_is_not_training_time():
    meter = UsageMeter(torch.device("cpu"))
    paused = meter.aside(time.sleep)
    started = time.perf_counter()
    paused(PAUSE_S)
    usage = meter.usage(steps=10, tokens_seen=1000, first_step=0)
    assert usage.train_seconds < time.perf_counter() - started - PAUSE_S + 0.05
    assert usage.train_tokens == 1000


def test_a_resumed_run_counts_only_the_tokens_of_the_steps_it_timed():
    usage = UsageMeter(torch.device("cpu")).usage(steps=10, tokens_seen=1000, first_step=4)
    assert usage.train_tokens == 600
    assert UsageMeter(torch.device("cpu")).usage(steps=0, tokens_seen=0, first_step=0).train_tokens == 0
