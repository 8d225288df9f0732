"""How large a trial is: its workers follow from execution.gpus (or workers on CPU), a batch that does not split over
them and a base that does not fit them are refused naming the keys and figures, and a ladder of one model family
gets GPUs per trial and trials at once rung by rung."""

from __future__ import annotations

import pytest

from sweep.ladder.gpus import rung_gpus
from sweep.spec.rung_trial import rung_trial_gpus
from sweep.spec.shapes import hf_shape
from sweep.spec.trial_scale import TrialScale, check_trial_fits, on_gpus, trials_at_once, trials_per_gpu
from tests.hf_dirs import llama_family_dirs
from train_entry.trial_config import ProxyConfig

PROXY = ProxyConfig(steps=100, seq_len=2048, batch_size=8, warmup_steps=10, eval_interval=25)


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    root = llama_family_dirs(tmp_path_factory.mktemp("models"))
    return {name: hf_shape(root / name, PROXY.seq_len) for name in ("Llama-3.2-1B", "Llama-3.2-3B", "Llama-3.1-8B")}


@pytest.mark.parametrize(
    ("settings", "workers", "sharded"),
    [({}, 1, False), ({"gpus": 0.5}, 1, False), ({"gpus": 1}, 1, False), ({"gpus": 4}, 4, True),
     ({"workers": 2}, 2, True), ({"gpus": 4, "workers": 4}, 4, True)],
)  # fmt: skip
def test_a_trial_runs_one_worker_per_gpu_or_the_workers_asked_for_on_cpu(settings, workers, sharded):
    scale = TrialScale(**settings)
    assert (scale.trial_workers, scale.sharded) == (workers, sharded)
    job = scale.job_workers(max_retries=2)
    assert (job.count, job.gpus, job.max_failures) == (workers, scale.gpus >= 1, 2)


@pytest.mark.parametrize(
    ("settings", "message"),
    [({"gpus": 1.5}, "gpus above 1 takes whole GPUs, one per worker of the trial, got gpus=1.5"),
     ({"gpus": 4, "workers": 2}, r"workers \(2\) must equal gpus \(4\), or be left out"),
     ({"gpus": 0.5, "workers": 2}, "a trial of 2 workers takes a whole GPU per worker, got gpus=0.5")],
)  # fmt: skip
def test_workers_that_contradict_the_gpus_are_refused(settings, message):
    with pytest.raises(ValueError, match=message):
        TrialScale(**settings)


def test_a_batch_that_does_not_split_over_the_workers_is_refused():
    with pytest.raises(ValueError, match=r"proxy.batch_size \(8\) must be a multiple of a trial's 3 workers"):
        check_trial_fits(TrialScale(workers=3), PROXY, None, base="base.model")
    with pytest.raises(
        ValueError, match=r"checkpoint_interval \(30\) must be a multiple of proxy.eval_interval \(25\)"
    ):
        check_trial_fits(TrialScale(workers=2, checkpoint_interval=30), PROXY, None, base="base.model")


def test_an_8b_trial_on_one_gpu_is_refused_with_its_figures_and_the_gpus_that_hold_it(family):
    eight = family["Llama-3.1-8B"]
    with pytest.raises(ValueError) as refused:
        check_trial_fits(TrialScale(gpus=1), PROXY, eight, base="Llama-3.1-8B")
    message = str(refused.value)
    assert message.startswith("execution.gpus = 1: a trial of Llama-3.1-8B needs ")
    assert "per GPU over 1 GPU(s) for a 8.03B-parameter model" in message and "over the 80 GB it has" in message
    assert message.endswith("4 GPUs hold it (79.0 GB each): set execution.gpus: 4")
    check_trial_fits(TrialScale(gpus=4), PROXY, eight, base="Llama-3.1-8B")
    check_trial_fits(TrialScale(gpus=0), PROXY, eight, base="Llama-3.1-8B")  # on CPU the machine's memory counts
    with pytest.raises(ValueError, match="no number of GPUs up to 64 holds it: lower proxy.batch_size or"):
        check_trial_fits(TrialScale(gpus=1, gpu_memory_gb=16), PROXY, eight, base="Llama-3.1-8B")


def test_trials_sharing_a_gpu_must_fit_its_memory_together(family):
    one = family["Llama-3.2-1B"]
    small = PROXY.model_copy(update={"batch_size": 4})  # 40.3 GB per GPU
    check_trial_fits(TrialScale(gpus=1, activation_checkpointing=True), small, one, base="1B")
    with pytest.raises(ValueError) as refused:
        check_trial_fits(TrialScale(gpus=0.5, activation_checkpointing=True), small, one, base="1B")
    message = str(refused.value)
    assert message.startswith(
        "execution.gpus = 0.5: 2 trials of 1B at once share one GPU, each needing 40.3 GB per GPU"
    )
    assert message.endswith(
        ": 2 x 40.3 = 80.6 GB, over the 80 GB of one GPU (execution.gpu_memory_gb); 1 GPU holds it (40.3 GB each): "
        "set execution.gpus: 1"
    )
    # One trial at a time has the GPU to itself, whatever its share.
    check_trial_fits(TrialScale(gpus=0.5, activation_checkpointing=True), small, one, base="1B", concurrency=1)


def test_four_trials_at_a_quarter_gpu_are_refused_with_the_sum_and_the_shares_that_fit(family):
    one = family["Llama-3.2-1B"]
    small = PROXY.model_copy(update={"batch_size": 1})  # 31.25 GB per GPU: 4 of them 125.0 GB, over 120
    scale = TrialScale(gpus=0.25, gpu_memory_gb=120, activation_checkpointing=True)
    with pytest.raises(ValueError) as refused:
        check_trial_fits(scale, small, one, base="1B", concurrency=8)
    message = str(refused.value)
    assert message.startswith(
        "execution.gpus = 0.25: 4 trials of 1B at once share one GPU (execution.concurrency 8), each needing 31.3 GB"
    )
    assert message.endswith(
        ": 4 x 31.3 = 125.0 GB, over the 120 GB of one GPU (execution.gpu_memory_gb); 3 fit one GPU: set "
        "execution.gpus: 0.3333, or execution.concurrency: 3"
    )
    # Either setting the refusal names holds them: 3 trials of a third of a GPU, or 3 at once of a quarter.
    check_trial_fits(scale.model_copy(update={"gpus": 0.3333}), small, one, base="1B", concurrency=8)
    check_trial_fits(scale, small, one, base="1B", concurrency=3)


@pytest.mark.parametrize(
    ("gpus", "concurrency", "sharing"),
    [(1, 8, 1), (2, 8, 1), (0.5, 8, 2), (0.25, 8, 4), (0.25, 2, 2), (0.3, 8, 3), (0.1, 16, 10), (0.3333, None, 3),
     (0.25, None, 4)],
)  # fmt: skip
def test_trials_share_a_gpu_as_its_shares_and_the_concurrency_allow(gpus, concurrency, sharing):
    assert trials_per_gpu(TrialScale(gpus=gpus), concurrency=concurrency) == sharing


def test_each_rung_of_a_family_ladder_gets_the_gpus_that_hold_it_and_as_many_trials_as_the_gpus_allow(family):
    scale = TrialScale(gpus=1, activation_checkpointing=True)
    gpus = [rung_trial_gpus(scale, PROXY, shape, named=None, key="k", base=name) for name, shape in family.items()]
    assert gpus == [1, 2, 4]
    rows = [
        rung_gpus(name, shape, PROXY, on_gpus(scale, count), concurrency=8, max_gpus=8)
        for (name, shape), count in zip(family.items(), gpus)
    ]
    assert [(row.gpus, row.at_once) for row in rows] == [(1, 8), (2, 4), (4, 2)]
    assert all(row.memory.total_gb <= 80 for row in rows)
    assert rows[-1].line() == (
        "rung Llama-3.1-8B: 8.03B parameters, 4 GPU(s) per trial, 2 trial(s) at once, 53.8 GB per GPU"
    )
    with pytest.raises(ValueError, match="ladder.rungs.2.gpus = 2: a trial of 8B needs"):
        rung_trial_gpus(scale, PROXY, family["Llama-3.1-8B"], named=2, key="ladder.rungs.2.gpus", base="8B")
    assert trials_at_once(TrialScale(gpus=4), concurrency=8, max_gpus=None) == 8
    assert trials_at_once(TrialScale(gpus=0.5), concurrency=8, max_gpus=1) == 2
