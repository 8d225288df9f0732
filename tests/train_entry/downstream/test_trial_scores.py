"""A real proxy trial of the tiny spec scored on the bundled task with lm-evaluation-harness: the base once, the trial
at its end, each drop the base's score minus the trial's on the same examples, recorded in result.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.run.prepare import prepare
from sweep.spec.spec import load_spec
from train_entry.file_format import TRIAL_RESULT
from train_entry.mix import MixRatio
from train_entry.proxy import run_trial
from train_entry.trial_config import RESULT_JSON, TrialResult, TrialStatus

TASK = Path(__file__).resolve().parents[3] / "data" / "tasks" / "general_mc" / "general_mc.yaml"
NAME = "cpt_sweep_general_mc"


@pytest.fixture(scope="module")
def scored(tiny_corpora, tmp_path_factory):
    from tests.conftest import write_spec

    spec = write_spec(
        tiny_corpora, "downstream.yaml", evaluation={"downstream": {"tasks": [{"task": str(TASK)}], "limit": 24}}
    )
    # The session's cache: the tiny base, its tokenizer and corpora are the other tests' (seconds of pretraining), and
    # the base's scores are cached by the base, the tasks and the limit like any other entry.
    prepared = prepare(load_spec(spec))
    output = tmp_path_factory.mktemp("trial")
    config = prepared.trial_config(lr_fraction=0.2, mix=MixRatio(1, 1), output_dir=output)
    return prepared, run_trial(config, lambda metrics: False), output


def test_the_base_is_scored_once_on_the_limited_examples(scored):
    prepared, _, _ = scored
    base = prepared.downstream_base.tasks[NAME]
    assert len(base.examples) == 24 and set(base.examples) <= {0.0, 1.0}
    assert base.score == pytest.approx(sum(base.examples) / 24)
    assert 0.0 < base.stderr < 0.2


def test_a_completed_trial_records_its_score_and_drop_against_the_base(scored):
    prepared, result, output = scored
    assert result.status is TrialStatus.COMPLETED
    task = result.downstream[NAME]
    assert task.metric == "acc"
    assert task.base_score == prepared.downstream_base.tasks[NAME].score
    assert task.drop == pytest.approx(task.base_score - task.score)
    assert task.drop_error is not None and task.drop_error >= 0.0
    assert result.usage.downstream_seconds > 0.0
    assert TRIAL_RESULT.read(output / RESULT_JSON, TrialResult).downstream == result.downstream


def test_a_stopped_trial_is_not_scored(scored, tmp_path):
    prepared, _, _ = scored
    config = prepared.trial_config(lr_fraction=0.2, mix=MixRatio(1, 1), output_dir=tmp_path)
    stopped = run_trial(config, lambda metrics: True)
    assert stopped.status is TrialStatus.STOPPED and stopped.downstream is None


def test_scoring_reaches_no_network(monkeypatch):
    """With every socket connection refused, the bundled task is still scored: its data are local files and the
    harness is set offline (a connection attempt would raise here rather than wait)."""
    import socket

    from transformers import AutoModelForCausalLM

    from train_entry.downstream.harness import score
    from train_entry.downstream.tasks import DownstreamPlan, read_task

    def refused(*args, **kwargs):
        raise OSError("network access in a test that must not reach the network")

    monkeypatch.setattr(socket.socket, "connect", refused)
    monkeypatch.setattr(socket, "create_connection", refused)
    base = Path(__file__).resolve().parents[3] / "data" / "tiny-llama"
    plan = DownstreamPlan(tasks=[read_task(TASK, "acc")], limit=8)
    scores = score(AutoModelForCausalLM.from_pretrained(base), str(base), plan, device="cpu")
    assert len(scores.tasks[NAME].examples) == 8
