"""A proxy trial sharded over two gloo workers (FSDP2 on CPU): the one-process trial's numbers and one report per
evaluation from rank 0. That a crashed trial resumes from its own checkpoint with no step counted twice, and that
a report's answer stops every worker, are tested where Ray Train restarts and stops the workers, in
tests/sweep/run/test_sharded_job.py.

fully_shard runs on CPU under gloo in torch 2.13; its mixed precision (bf16 compute, fp32 reduction) is what the
sharded trial uses on CUDA only, and tests/train_entry/sharded/test_trial_gpu.py checks it there.
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from sweep.run.prepare import Prepared, prepare
from sweep.spec.spec import load_spec
from tests.train_entry.sharded.spawned import ScriptedReport, run_workers
from train_entry.file_format import TRIAL_RESULT
from train_entry.mix import MixRatio
from train_entry.proxy import run_trial
from train_entry.sharded.checkpoint import CHECKPOINT_DIR
from train_entry.trial_config import RESULT_JSON, TrialConfig, TrialResult, TrialStatus

TOLERANCE = 1e-5
"""Relative, on every loss (and absolute on domain_gain and forgetting, which are a loss ratio less 1): float32 on
CPU, the batch's loss and gradients summed over two workers in another order than one process sums them. After
40 steps the two agree to ~1e-7."""


@pytest.fixture(scope="module")
def prepared(tiny_spec_path) -> Prepared:
    return prepare(load_spec(tiny_spec_path))


@pytest.fixture(scope="module")
def config(prepared, tmp_path_factory) -> TrialConfig:
    """The tiny spec's trial, evaluated every 10 of its 40 steps (so that a crash can come between checkpoints)."""
    config = prepared.trial_config(
        lr_fraction=0.1, mix=MixRatio(1, 1), output_dir=tmp_path_factory.mktemp("trial") / "one"
    )
    return config.model_copy(update={"proxy": config.proxy.model_copy(update={"eval_interval": 10})})


@pytest.fixture(scope="module")
def untied(prepared, config, tmp_path_factory) -> TrialConfig:
    """The trial on a copy of the base whose output layer is its own (the built-in base ties it to the input
    embedding, as Llama 3.2 1B and 3B do; Llama 3.1 8B does not): sharded, the two are units of their own."""
    model = AutoModelForCausalLM.from_pretrained(prepared.base_dir)
    model.config.tie_word_embeddings = False
    model.lm_head.weight = torch.nn.Parameter(model.get_input_embeddings().weight.detach().clone())
    base_dir = tmp_path_factory.mktemp("untied") / "base"
    model.save_pretrained(base_dir)
    AutoTokenizer.from_pretrained(prepared.tokenizer_dir).save_pretrained(base_dir)
    return config.model_copy(update={"base_dir": str(base_dir)})


def at(config: TrialConfig, folder) -> TrialConfig:
    return config.model_copy(update={"output_dir": str(folder)})


def reported(report: ScriptedReport) -> list[int]:
    return [int(line) for line in report.log.read_text().split()]


def assert_same_measurements(sharded: TrialResult, one: TrialResult) -> None:
    assert [m.step for m in sharded.history] == [m.step for m in one.history]
    for ours, theirs in zip(sharded.history, one.history):
        assert ours.tokens_seen == theirs.tokens_seen
        for key in ("domain_loss", "general_loss", "train_loss", "lr"):
            assert getattr(ours, key) == pytest.approx(getattr(theirs, key), rel=TOLERANCE), key
        for key in ("domain_gain", "forgetting"):
            assert getattr(ours, key) == pytest.approx(getattr(theirs, key), abs=TOLERANCE), key


def same_on_every_worker(results: list[TrialResult | str]) -> TrialResult:
    assert all(isinstance(result, TrialResult) for result in results), results
    first, *others = results
    timing = {"wall_seconds": 0, "usage": None}  # each worker's own clock
    assert all(other.model_copy(update=timing) == first.model_copy(update=timing) for other in others)
    assert all(other.usage.train_tokens == first.usage.train_tokens for other in others)
    return first


@pytest.mark.slow
def test_a_sharded_trial_measures_what_one_process_does(untied, tmp_path):
    one_process = run_trial(at(untied, tmp_path / "one"), lambda metrics: False)
    report = ScriptedReport(tmp_path / "reports")
    sharded = same_on_every_worker(run_workers(at(untied, tmp_path / "trial"), tmp_path / "workers", report))

    assert sharded.status is TrialStatus.COMPLETED and sharded.steps == untied.proxy.steps
    assert_same_measurements(sharded, one_process)
    assert reported(report) == [10, 20, 30, 40]  # rank 0 alone reports, once per evaluation
    assert TRIAL_RESULT.read(tmp_path / "trial" / RESULT_JSON, TrialResult) == sharded
    assert not (tmp_path / "trial" / CHECKPOINT_DIR).exists()  # the trial ended: nothing to resume
