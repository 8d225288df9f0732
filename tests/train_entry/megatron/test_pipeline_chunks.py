"""Two ranks of a pipeline with virtual stages build their chunks on CPU: who holds which layers.

Two real processes on a gloo group (megatron-core needs a rank per pipeline stage); the forward
pass would need CUDA, the layout does not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch.multiprocessing as mp

from train_entry.megatron.config import FullRunConfig

pytestmark = pytest.mark.slow

# Eight layers over 2 pipeline stages x 2 virtual stages: two layers per chunk, interleaved.
EXPECTED = {
    0: [{"first": True, "last": False, "layers": [1, 2]}, {"first": False, "last": False, "layers": [5, 6]}],
    1: [{"first": False, "last": False, "layers": [3, 4]}, {"first": False, "last": True, "layers": [7, 8]}],
}


def _rank(rank: int, config_json: str, store: str, out: str) -> None:
    import torch.distributed as dist
    from megatron.core import parallel_state

    from train_entry.megatron.core_configs import core_configs
    from train_entry.megatron.model import build_chunks

    config = FullRunConfig.model_validate_json(config_json)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    try:
        parallel_state.initialize_model_parallel(pipeline_model_parallel_size=2, virtual_pipeline_model_parallel_size=2)
        transformer, _, _ = core_configs(config, transformer_engine=False, use_cpu_initialization=True)
        chunks = build_chunks(config.model, transformer, transformer_engine=False)
        report = [
            {
                "first": chunk.pre_process,
                "last": chunk.post_process,
                "layers": [layer.layer_number for layer in chunk.decoder.layers],
            }
            for chunk in chunks
        ]
        Path(out, f"{rank}.json").write_text(json.dumps(report))
    finally:
        parallel_state.destroy_model_parallel()
        dist.destroy_process_group()


def test_each_stage_holds_its_interleaved_layers(full_run_data, tmp_path):
    data = full_run_data(pipeline=2, virtual_pipeline=2)
    data["model"] = {
        "num_layers": 8,
        "hidden_size": 32,
        "ffn_hidden_size": 64,
        "num_attention_heads": 2,
        "num_query_groups": 1,
        "vocab_size": 64,
        "seq_length": 16,
    }
    data["parallelism"]["global_batch_size"] = 4
    data["optimization"] |= {"bf16": False}
    config = FullRunConfig.model_validate(data)
    mp.start_processes(
        _rank,
        args=(config.model_dump_json(), str(tmp_path / "store"), str(tmp_path)),
        nprocs=2,
        join=True,
        start_method="spawn",
    )
    assert {rank: json.loads((tmp_path / f"{rank}.json").read_text()) for rank in (0, 1)} == EXPECTED
