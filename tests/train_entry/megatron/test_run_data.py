"""The full run's samples: the plan's blend through megatron-core, consumed in one order that a resume continues."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from train_entry.megatron.config import FullRunConfig, RunConfigError
from train_entry.megatron.data import DataParallelMicroBatches, build_datasets, micro_batches

WEIGHTS = {"general": 0.7, "domain": 0.3}


def _config(full_run_data, blend_data, tmp_path, *, valid: bool = False, **top) -> FullRunConfig:
    data = full_run_data()
    data["model"] |= {"seq_length": 32}
    data["parallelism"] = {"global_batch_size": 8, "micro_batch_size": 2}
    data["optimization"] |= {"train_iters": 12, "warmup_iters": 2}
    data["data"] = blend_data(WEIGHTS, cache_dir=tmp_path / "index-cache", valid=valid)
    return FullRunConfig.model_validate({**data, **top})


def test_train_split_is_blended_by_the_plans_weights(single_rank_group, full_run_data, blend_data, tmp_path):
    datasets = build_datasets(_config(full_run_data, blend_data, tmp_path), built_on_this_rank=True)
    assert len(datasets.train) >= 12 * 8 and datasets.valid == []  # megatron-core rounds each share up
    shares = np.bincount(datasets.train.dataset_index, minlength=2) / len(datasets.train)
    assert shares == pytest.approx(list(WEIGHTS.values()), abs=0.02)
    sample = datasets.train[0]
    assert sample["tokens"].shape == sample["labels"].shape == (32,)
    assert torch.equal(sample["tokens"][1:], sample["labels"][:-1])


def test_each_validation_set_is_its_own_fixed_held_out_text(single_rank_group, full_run_data, blend_data, tmp_path):
    config = _config(full_run_data, blend_data, tmp_path, valid=True, eval_interval=4, eval_iters=2)
    datasets = build_datasets(config, built_on_this_rank=True)
    general, domain = datasets.valid
    assert len(general) >= 2 * 8 and len(domain) >= 2 * 8  # whole epochs: an evaluation reads the first 2 x 8
    # Each set reads its own prefix whole (no blend, no split), as Megatron-LM's --valid-data-path does.
    assert [dataset.dataset_path for dataset in datasets.valid] == [item.prefix for item in config.data.valid]
    assert general.index_split.name == domain.index_split.name == "valid"
    assert [len(dataset.indices) for dataset in datasets.valid] == [len(dataset.dataset) for dataset in datasets.valid]
    assert not torch.equal(general[0]["tokens"], domain[0]["tokens"])
    again = build_datasets(config, built_on_this_rank=True)
    assert all(torch.equal(a[5]["tokens"], b[5]["tokens"]) for a, b in zip(datasets.valid, again.valid, strict=True))


def test_with_validation_sets_the_training_prefixes_are_read_whole(
    single_rank_group, full_run_data, blend_data, tmp_path
):
    whole = build_datasets(_config(full_run_data, blend_data, tmp_path, valid=True), built_on_this_rank=True).train
    split = build_datasets(_config(full_run_data, blend_data, tmp_path), built_on_this_rank=True).train
    # "90,10,0" holds a tenth of each prefix's documents out of training; beside separate sets nothing is held out.
    assert [len(dataset.indices) for dataset in whole.datasets] == [len(dataset.dataset) for dataset in whole.datasets]
    assert all(len(dataset.indices) < 0.95 * len(dataset.dataset) for dataset in split.datasets)


def test_evaluation_needs_validation_sets(full_run_data, blend_data, tmp_path):
    with pytest.raises(ValueError, match="eval_interval needs validation sets to evaluate: data.valid is empty"):
        _config(full_run_data, blend_data, tmp_path, eval_interval=4)
    data = blend_data(WEIGHTS, cache_dir=tmp_path, valid=True)
    data["valid"][1]["side"] = "general"
    with pytest.raises(ValueError, match="general and domain once each"):
        _config(full_run_data, lambda *_, **__: data, tmp_path)


def test_ranks_that_read_no_data_get_none(single_rank_group, full_run_data, blend_data, tmp_path):
    config = _config(full_run_data, blend_data, tmp_path, valid=True, eval_interval=4)
    datasets = build_datasets(config, built_on_this_rank=False)
    assert datasets.train is None and datasets.valid == []


def test_a_tokenizer_larger_than_the_embedding_is_rejected(single_rank_group, full_run_data, blend_data, tmp_path):
    config = _config(full_run_data, blend_data, tmp_path)
    config = config.model_copy(update={"model": config.model.model_copy(update={"vocab_size": 256})})
    with pytest.raises(RunConfigError, match="has 512 tokens, more than the model's model.vocab_size=256"):
        build_datasets(config, built_on_this_rank=True)


def test_data_parallel_ranks_split_every_global_batch_once():
    batches = {
        rank: list(DataParallelMicroBatches(total=48, consumed=0, micro_batch_size=2, rank=rank, size=3))
        for rank in range(3)
    }
    assert all(len(rank_batches) == 8 for rank_batches in batches.values())
    seen = sorted(index for rank_batches in batches.values() for batch in rank_batches for index in batch)
    assert seen == list(range(48))
    assert batches[1][0] == [2, 3] and batches[1][1] == [8, 9]


def test_a_resume_continues_with_the_sample_after_the_last_one_trained():
    uninterrupted = list(DataParallelMicroBatches(total=64, consumed=0, micro_batch_size=2, rank=1, size=2))
    resumed = list(DataParallelMicroBatches(total=64, consumed=24, micro_batch_size=2, rank=1, size=2))
    assert resumed == uninterrupted[6:]
    # Killed again after 6 more micro-batches: the second resume starts where the first one stopped.
    again = list(DataParallelMicroBatches(total=64, consumed=48, micro_batch_size=2, rank=1, size=2))
    assert uninterrupted[:6] + resumed[:6] + again == uninterrupted
    with pytest.raises(ValueError, match="consumed=3"):
        DataParallelMicroBatches(total=64, consumed=3, micro_batch_size=2, rank=0, size=2)


def test_micro_batches_read_the_samples_the_sampler_names(single_rank_group, full_run_data, blend_data, tmp_path):
    train = build_datasets(_config(full_run_data, blend_data, tmp_path), built_on_this_rank=True).train
    batches = micro_batches(train, consumed=16, micro_batch_size=2, rank=1, size=2, num_workers=0)
    first = next(batches)
    assert first["tokens"].shape == (2, 32)
    assert torch.equal(first["tokens"], torch.stack([train[18]["tokens"], train[19]["tokens"]]))
