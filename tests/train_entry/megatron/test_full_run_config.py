"""FullRunConfig: the plan/entry contract round-trips through JSON and rejects layouts that cannot run."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from train_entry.megatron.config import FullRunConfig, RunConfigError


def test_round_trips_through_json(full_run):
    assert FullRunConfig.model_validate_json(full_run.model_dump_json()) == full_run


def test_every_field_is_documented():
    def undocumented(model: type) -> list[str]:
        missing = []
        for name, field in model.model_fields.items():
            if field.description is None and name not in _SELF_EXPLANATORY:
                missing.append(f"{model.__name__}.{name}")
            annotation = field.annotation
            for sub in getattr(annotation, "__args__", (annotation,)):
                if isinstance(sub, type) and hasattr(sub, "model_fields"):
                    missing += undocumented(sub)
        return missing

    assert undocumented(FullRunConfig) == []


# Names that say all there is to say; everything else carries a docstring with its unit or reason.
_SELF_EXPLANATORY = {
    "num_layers",
    "hidden_size",
    "num_attention_heads",
    "model",
    "parallelism",
    "optimization",
    "data",
    "checkpoint",
    "pipeline",
    "adam_beta1",
    "adam_eps",
}


@pytest.mark.parametrize(
    ("parallelism", "message"),
    [
        ({"tensor": 1, "sequence_parallel": True}, "sequence_parallel needs tensor >= 2"),
        ({"pipeline": 1, "virtual_pipeline": 2}, "virtual_pipeline needs pipeline >= 2"),
        ({"tensor": 8, "pipeline": 4, "data": 7}, "self.global_batch_size=1440, self.micro_batch_size=1, self.data=7"),
        ({"tensor": 7}, "model.vocab_size=128256, parallelism.tensor=7"),
        ({"context": 3}, "multiple of 6"),
        ({"tensor": 8, "pipeline": 4, "virtual_pipeline": 5, "data": 16}, "90 micro-batches .* multiple of pipeline=4"),
    ],
)
def test_rejects_layouts_that_cannot_run(full_run_data, parallelism, message):
    with pytest.raises(ValidationError, match=message):
        FullRunConfig.model_validate(full_run_data(**parallelism))


def test_rejects_a_schedule_and_shape_that_cannot_run(full_run_data):
    data = full_run_data()
    data["optimization"] |= {"warmup_iters": 85000}
    with pytest.raises(ValidationError, match="warmup_iters must be below train_iters"):
        FullRunConfig.model_validate(data)
    data = full_run_data()
    data["model"] |= {"num_query_groups": 6}
    with pytest.raises(ValidationError, match="num_attention_heads=64, self.num_query_groups=6"):
        FullRunConfig.model_validate(data)
    data = full_run_data()
    data["data"] |= {"split": "99,1"}
    with pytest.raises(ValidationError, match="'99,1'"):
        FullRunConfig.model_validate(data)
    data = full_run_data()
    data["model"] |= {"unknown": 1}
    with pytest.raises(ValidationError, match="unknown"):
        FullRunConfig.model_validate(data)


def test_data_parallel_size_is_derived_from_the_world_or_checked_against_it(full_run_data):
    free = FullRunConfig.model_validate(full_run_data(tensor=8, pipeline=4)).parallelism
    assert free.data_parallel_size(480) == 15
    with pytest.raises(ValueError, match="world size 100 is not a multiple of tensor x pipeline x context = 8 x 4 x 1"):
        free.data_parallel_size(100)
    pinned = FullRunConfig.model_validate(full_run_data(tensor=8, pipeline=4, data=15)).parallelism
    with pytest.raises(ValueError, match="needs 480 GPUs, got world size 256"):
        pinned.data_parallel_size(256)
    with pytest.raises(ValueError, match="data-parallel size 7"):
        free.data_parallel_size(224)


def test_interleaved_pipelines_need_micro_batches_in_groups_of_the_pipeline(full_run_data):
    interleaved = FullRunConfig.model_validate(full_run_data(tensor=8, pipeline=4, virtual_pipeline=5)).parallelism
    assert interleaved.num_microbatches(480) == 96  # 1440 sequences over 15 data-parallel ranks
    with pytest.raises(RunConfigError, match="the 90 micro-batches per iteration .* must be a multiple of pipeline=4"):
        interleaved.num_microbatches(512)
    plain = FullRunConfig.model_validate(full_run_data(tensor=8, pipeline=4)).parallelism
    assert plain.num_microbatches(512) == 90
