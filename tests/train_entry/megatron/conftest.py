"""Full-run configs at the reference recipe's scales, for the config and core-config tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sweep.target.families.llama import LLAMA_3_1_8B, LLAMA_3_1_70B
from train_entry.data.corpus import Corpus
from train_entry.data.indexed import build_indexed
from train_entry.data.tokenizer import train_bpe
from train_entry.megatron.config import FullRunConfig, ModelShape


def _full_run(**parallelism: Any) -> dict[str, Any]:
    """A plan-shaped run config as JSON data: Llama 3.1 70B, 1440 x 8192-token batches, 85 000 steps."""
    return {
        "model": LLAMA_3_1_70B.model_dump(),
        "parallelism": {"global_batch_size": 1440, **parallelism},
        "optimization": {"lr": 1.5e-5, "min_lr": 1.5e-6, "warmup_iters": 2000, "train_iters": 85000},
        "data": {
            "blend": [
                {"weight": 0.45, "prefix": "/data/general_text_document", "name": "general"},
                {"weight": 0.05, "prefix": "/data/non_english_text_document", "name": "non_english"},
                {"weight": 0.5, "prefix": "/data/domain_text_document", "name": "domain"},
            ],
            "tokenizer": "/models/llama-3.1-70b",
        },
        "checkpoint": {"save_dir": "/ckpt/run", "save_interval": 500, "base_dir": "/ckpt/llama-3.1-70b"},
    }


@pytest.fixture
def full_run_data() -> Callable[..., dict[str, Any]]:
    """full_run_data(**parallelism): a 70B run config as JSON data, parallelism fields overridden."""
    return _full_run


LAYOUTS = {
    # 480 H100s as the reference recipe ran them.
    "70b-tp8-pp4-vpp5-dp15": (
        LLAMA_3_1_70B,
        {
            "tensor": 8,
            "pipeline": 4,
            "virtual_pipeline": 5,
            "data": 15,
            "sequence_parallel": True,
            "recompute": "selective",
        },
    ),
    "70b-tp8-pp8-cp2-full": (LLAMA_3_1_70B, {"tensor": 8, "pipeline": 8, "context": 2, "recompute": "full"}),
    "8b-tp2-dp240": (LLAMA_3_1_8B, {"tensor": 2, "data": 240, "micro_batch_size": 2, "sequence_parallel": True}),
    "8b-tp8-pp2-vpp4": (LLAMA_3_1_8B, {"tensor": 8, "pipeline": 2, "virtual_pipeline": 4}),
}


@pytest.fixture(params=sorted(LAYOUTS))
def full_run(request) -> FullRunConfig:
    """Each of LAYOUTS as a validated FullRunConfig."""
    model, parallelism = LAYOUTS[request.param]
    return FullRunConfig.model_validate({**_full_run(**parallelism), "model": model.model_dump()})


@pytest.fixture
def tiny_gpu_shape() -> ModelShape:
    """A 2-layer Llama small enough for a GPU test's many steps, large enough to split into several DDP buckets."""
    return ModelShape(
        num_layers=2, hidden_size=128, ffn_hidden_size=352, num_attention_heads=4, num_query_groups=2,
        vocab_size=512, seq_length=64,
    )  # fmt: skip


@pytest.fixture
def single_rank_group():
    """A one-process gloo group on an in-memory store with megatron-core's parallel state over it.

    What megatron-core's model building and dataset building need from a job, without a GPU or a port.
    """
    import torch.distributed as dist
    from megatron.core import parallel_state

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        parallel_state.initialize_model_parallel()
        yield
    finally:
        parallel_state.destroy_model_parallel()
        dist.destroy_process_group()


@pytest.fixture(scope="session")
def indexed_corpora(tiny_corpora, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A 512-token BPE and the tiny general and e-commerce corpora indexed with it: prefixes by name, the training
    text as "general" and "domain", the held-out text as "general_valid" and "domain_valid"."""
    cache = tmp_path_factory.mktemp("full-run-data")
    corpora = tiny_corpora / "corpora"
    tokenizer = train_bpe([Corpus.of(corpora / "general_en/train.jsonl")], 512, cache)
    files = {"general": "general_en", "domain": "ecommerce"}
    prefixes = {}
    for side, folder in files.items():
        for suffix, split in (("", "train"), ("_valid", "valid")):
            prefixes[side + suffix] = build_indexed(
                Corpus.of(corpora / f"{folder}/{split}.jsonl"), tokenizer, cache
            ).prefix
    return tokenizer, prefixes


@pytest.fixture
def blend_data(indexed_corpora) -> Callable[..., dict[str, Any]]:
    """blend_data(weights, cache_dir=..., valid=False): a run config's data section over the indexed tiny corpora;
    with `valid`, the general and domain held-out sets to evaluate apart."""
    tokenizer, prefixes = indexed_corpora

    def make(weights: dict[str, float], *, cache_dir: Path, valid: bool = False) -> dict[str, Any]:
        sets = [{"side": side, "prefix": prefixes[f"{side}_valid"]} for side in ("general", "domain")]
        return {
            "blend": [{"weight": weight, "prefix": prefixes[name], "name": name} for name, weight in weights.items()],
            "tokenizer": str(tokenizer),
            "split": "90,10,0",
            "cache_dir": str(cache_dir),
            "num_workers": 0,
            "valid": sets if valid else [],
        }

    return make
