"""The plan's MoE step-time and memory models against a published Megatron-Core MoE run on H100s.

Megatron-Bridge's performance summary (NVIDIA-NeMo/Megatron-Bridge, docs/performance-summary.md, "25.11 NeMo Container", table "System:
DGX-H100") measured Qwen3-30B-A3B pretraining on 16 H100s: GBS 512, MBS 2, sequence 4096, TP 1, PP 2, VP 24, EP 8,
CP 1, FP8 (current scaling), token-dropless with the experts' load forced even, 5,275 tokens/s/GPU and 121 model
TFLOP/s/GPU. This prices that layout (DP 8 follows) for the Qwen3-30B-A3B shape, as the family reads its
released config.json, at the plan's 43 % MFU assumption, and prints the predicted step, memory and throughput
beside the measured ones. The run was FP8; the plan is bf16, so the measured step is, if anything, shorter than a
bf16 run's: the model's optimism is at least the ratio printed. The row does not say which recomputation ran,
so each is printed. No GPU is used.

    .venv/bin/python benchmarks/moe_plan_models.py
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from sweep.promote.estimate.assumptions import Assumptions
from sweep.promote.estimate.clusters import PRESETS
from sweep.promote.estimate.counts import model_flops_per_token
from sweep.promote.estimate.memory import memory_per_gpu
from sweep.promote.estimate.step_time import step_time
from sweep.scale import active_params, total_params
from sweep.target.families.registry import hf_shape
from train_entry.megatron.config import Parallelism, ddp_bucket_size

PUBLISHED = {
    "gpus": 16,
    "global_batch": 512,
    "micro_batch": 2,
    "seq_length": 4096,
    "layout": {"tensor": 1, "pipeline": 2, "virtual_pipeline": 24, "context": 1, "expert": 8},
    "tokens_per_s_per_gpu": 5275,
    "model_tflops_per_gpu": 121,
}
"""NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md, 25.11 container, DGX-H100 table, row Qwen3_30B_a3B."""

QWEN3_30B_A3B = {
    "model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
    "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
    "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": True, "router_aux_loss_coef": 0.001,
    "vocab_size": 151936, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "max_position_embeddings": 40960,
    "tie_word_embeddings": False, "hidden_act": "silu",
}  # fmt: skip
"""Qwen/Qwen3-30B-A3B's config.json, its shape keys."""


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "config.json").write_text(json.dumps(QWEN3_30B_A3B))
        model, _ = hf_shape(Path(directory))
    model = model.model_copy(update={"seq_length": PUBLISHED["seq_length"]})
    cluster = PRESETS["h100-480"].model_copy(update={"name": "h100-16", "nodes": PUBLISHED["gpus"] // 8})
    tokens = PUBLISHED["global_batch"] * PUBLISHED["seq_length"]
    measured_step = tokens / (PUBLISHED["tokens_per_s_per_gpu"] * PUBLISHED["gpus"])
    implied = model_flops_per_token(model) * PUBLISHED["tokens_per_s_per_gpu"] / 1e12
    print(f"Qwen3-30B-A3B: {total_params(model) / 1e9:.2f} B parameters, {active_params(model) / 1e9:.2f} B active, "
          f"{model_flops_per_token(model) / 1e9:.2f} GFLOP per token (the plan's count)")  # fmt: skip
    print(f"measured: step {measured_step:.2f} s, {PUBLISHED['model_tflops_per_gpu']} model TFLOP/s/GPU published, "
          f"{implied:.0f} by the plan's FLOP count; fit in 80 GB")  # fmt: skip
    layout, data = (
        PUBLISHED["layout"],
        PUBLISHED["gpus"] // (PUBLISHED["layout"]["tensor"] * PUBLISHED["layout"]["pipeline"]),
    )
    for recompute in ("none", "selective", "full"):
        par = Parallelism(
            **layout, data=data, micro_batch_size=PUBLISHED["micro_batch"], global_batch_size=PUBLISHED["global_batch"],
            recompute=recompute, ddp_bucket_size=ddp_bucket_size(data),
        )  # fmt: skip
        step = step_time(model, par, data_parallel=data, cluster=cluster, assumptions=Assumptions())
        memory = memory_per_gpu(model, par, data_parallel=data, reserve_gb=Assumptions().memory_reserve_gb)
        print(
            f"recompute {recompute}: predicted step {step.total_s:.2f} s = {step.total_s / measured_step:.2f} x measured "
            f"(compute {step.compute_s:.2f}, last stage {step.imbalance_s:.2f}, bubble {step.bubble_s:.2f}, "
            f"PP {step.pp_comm_s:.2f}, EP {step.ep_comm_s:.2f}); memory {memory.total_gb:.1f} GB on the {memory.stage} "
            f"stage (weights {memory.weights_gb:.1f}, grads {memory.gradients_gb:.1f}, optimizer {memory.optimizer_gb:.1f}, "
            f"activations {memory.activations_gb:.1f}, reserve {memory.reserve_gb:.1f})"
        )


if __name__ == "__main__":
    main()
