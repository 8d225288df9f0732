"""The full-run job's preflight: a plan that needs what the image lacks stops before any worker or GPU, in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweep.target.families.llama import LLAMA_3_1_8B
from train_entry.file_format import JOB
from train_entry.fullrun import job as job_entry
from train_entry.fullrun.config import JobConfig, MegatronTrainer
from train_entry.megatron.core_configs import has_transformer_engine


def megatron_job(tmp_path, **parallelism) -> str:
    run = {
        "model": LLAMA_3_1_8B.model_dump(),
        "parallelism": {"global_batch_size": 1440, **parallelism},
        "optimization": {"lr": 3e-5, "min_lr": 3e-6, "warmup_iters": 10, "train_iters": 1000},
        "data": {"blend": [{"weight": 1.0, "prefix": "/lustre/general_text_document"}], "tokenizer": "/models/8b"},
        "checkpoint": {"save_dir": str(tmp_path / "run"), "save_interval": 100},
    }
    config = JobConfig(
        name="cpt-x", num_workers=16, workers_per_node=8, use_gpu=True, resources_per_worker={"GPU": 1},
        tensor_parallel=parallelism.get("tensor", 1), steps=1000, checkpoint_interval=100, max_failures=10,
        storage_path=str(tmp_path / "ray_train"), trainer=MegatronTrainer(run=run),
    )  # fmt: skip
    path = tmp_path / "job.json"
    path.write_text(JOB.dumps(config))
    return str(path)


@pytest.mark.skipif(has_transformer_engine(), reason="checks what an image without Transformer Engine answers")
def test_a_plan_needing_transformer_engine_stops_on_an_image_without_it_naming_the_setting(tmp_path, capsys):
    ray = pytest.importorskip("ray")
    path = megatron_job(tmp_path, tensor=2, sequence_parallel=True)
    assert job_entry.main(["--config", path]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: Transformer Engine's layers are needed for parallelism.sequence_parallel=True")
    assert not ray.is_initialized() and not (tmp_path / "ray_train").exists()


def test_a_run_config_megatron_core_rejects_stops_before_any_worker(tmp_path, capsys):
    path = megatron_job(tmp_path, tensor=8, pipeline=3)  # 32 layers do not split over 3 stages
    assert job_entry.main(["--config", path]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "num_layers=32 does not split over pipeline=3 stages with first_stage_layers=None" in line
    assert not (tmp_path / "ray_train").exists()


def test_a_run_config_that_is_no_full_run_config_names_the_key(tmp_path, capsys):
    path = tmp_path / "job.json"
    data = json.loads(Path(megatron_job(tmp_path)).read_text())
    data["trainer"]["run"]["parallelism"]["tensor"] = 0
    path.write_text(json.dumps(data))
    assert job_entry.main(["--config", str(path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "trainer.run.parallelism.tensor: Input should be greater than or equal to 1" in line
