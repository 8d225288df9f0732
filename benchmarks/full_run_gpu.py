"""The megatron-core full-run entry against bare PyTorch layers of the same shape, on this machine's GPU.

Two shapes, bf16: (a) Llama 3.1 8B's layers (hidden 4096, FFN 14336, 32 heads / 8 KV, vocabulary
128256) at sequence 8192, as many layers as fit the GPU; (b) a 0.5 B model (12 layers x 2048, FFN
5632, 16 heads / 8 KV: 566 M matrix parameters in its layers, vocabulary 32000) at sequence 2048.
The entry runs its own training iteration (train_entry.megatron.throughput: megatron-core's model,
DDP with fp32 gradient accumulation, the distributed optimizer's step and the LR schedule) on random
tokens. The bare reference is the same decoder layers written in plain PyTorch (nn.RMSNorm, RoPE,
SDPA causal grouped-query attention, SwiGLU; bf16 weights, forward and backward, no optimizer,
eager), timed in the same process. Model FLOPs follow the plan's convention (sweep.promote.counts:
6 x matrix parameters + 12 x layers x hidden x sequence per token): the entry's include its output
layer, the bare layers' do not. The card's dense bf16 matmul rate is measured on 8192^3 products.

    .venv/bin/python benchmarks/full_run_gpu.py [--iterations 5] [--layers-8b N]

Without a CUDA GPU it exits with code 2 and says so.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import time
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from sweep.promote.counts import kv_width, model_flops_per_token, output_layer_flops_per_token
from sweep.promote.memory import memory_per_gpu
from train_entry.megatron.config import LLAMA_3_1_8B, ModelShape, Parallelism

MEMORY_SHARE = 0.8
"""Of the card's memory, what the plan's memory model may fill when choosing the 8B shape's layer
count: that model is an estimate, and this margin keeps its error from ending in an out-of-memory."""
HALF_B = ModelShape(
    num_layers=12,
    hidden_size=2048,
    ffn_hidden_size=5632,
    num_attention_heads=16,
    num_query_groups=8,
    vocab_size=32000,
    seq_length=2048,
)


@dataclass(frozen=True)
class Case:
    name: str
    shape: ModelShape
    micro_batch_size: int
    microbatches: int
    """Micro-batches per entry iteration: the optimizer step is shared by them, as in a real run."""


@dataclass(frozen=True)
class Result:
    case: Case
    entry_tokens_per_s: float
    entry_tflops: float
    entry_memory_gb: float
    bare_tflops: float
    bare_memory_gb: float
    attention: str


def matmul_tflops(size: int = 8192, repeats: int = 10) -> float:
    """The card's dense bf16 matmul rate on random size^3 products, after three warm-up products."""
    a, b = (torch.randn(size, size, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    torch.cuda.synchronize()
    return 2 * size**3 * repeats / (time.perf_counter() - started) / 1e12


def layers_that_fit(shape: ModelShape, *, micro_batch_size: int, microbatches: int) -> int:
    """The most layers of `shape` the plan's memory model puts within MEMORY_SHARE of this GPU's memory."""
    card_gb = torch.cuda.get_device_properties(0).total_memory / 1e9
    par = Parallelism(micro_batch_size=micro_batch_size, global_batch_size=micro_batch_size * microbatches)
    layers = 1
    while (
        memory_per_gpu(
            shape.model_copy(update={"num_layers": layers + 1}), par, data_parallel=1, reserve_gb=2.0
        ).total_gb
        <= MEMORY_SHARE * card_gb
    ):
        layers += 1
    return layers


class BareLlamaLayer(nn.Module):
    """A Llama decoder layer as a textbook writes it: pre-norm attention and SwiGLU MLP with residuals."""

    def __init__(self, shape: ModelShape) -> None:
        super().__init__()
        h, kv = shape.hidden_size, kv_width(shape)
        self.heads, self.groups = shape.num_attention_heads, shape.num_query_groups
        self.attention_norm = nn.RMSNorm(h, eps=shape.norm_epsilon)
        self.qkv = nn.Linear(h, h + 2 * kv, bias=False)
        self.proj = nn.Linear(h, h, bias=False)
        self.mlp_norm = nn.RMSNorm(h, eps=shape.norm_epsilon)
        self.gate_up = nn.Linear(h, 2 * shape.ffn_hidden_size, bias=False)
        self.down = nn.Linear(shape.ffn_hidden_size, h, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, sequence, hidden = x.shape
        head_dim = hidden // self.heads
        q, k, v = self.qkv(self.attention_norm(x)).split([hidden, *(2 * [self.groups * head_dim])], dim=-1)
        q, k, v = (t.view(batch, sequence, -1, head_dim).transpose(1, 2) for t in (q, k, v))
        q, k = _rope(q, cos, sin), _rope(k, cos, sin)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.heads != self.groups)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, sequence, hidden))
        gate, up = self.gate_up(self.mlp_norm(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


def _rope(t: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    first, second = t.chunk(2, dim=-1)
    return t * cos + torch.cat((-second, first), dim=-1) * sin


def bare_layers(shape: ModelShape, *, micro_batch_size: int, iterations: int, warmup: int) -> tuple[float, float]:
    """Median seconds of forward + backward of shape.num_layers bare layers on one micro-batch, and peak GB."""
    torch.cuda.reset_peak_memory_stats()
    layers = nn.ModuleList(BareLlamaLayer(shape) for _ in range(shape.num_layers)).to("cuda", torch.bfloat16)
    head_dim = shape.hidden_size // shape.num_attention_heads
    inverse = shape.rotary_base ** (-torch.arange(0, head_dim, 2, device="cuda") / head_dim)
    angles = torch.outer(torch.arange(shape.seq_length, device="cuda"), inverse).repeat(1, 2)
    cos, sin = angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16)
    x = torch.randn(micro_batch_size, shape.seq_length, shape.hidden_size, device="cuda", dtype=torch.bfloat16)
    seconds = []
    for index in range(warmup + iterations):
        torch.cuda.synchronize()
        started = time.perf_counter()
        hidden = x
        for layer in layers:
            hidden = layer(hidden, cos, sin)
        hidden.float().square().mean().backward()
        layers.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if index >= warmup:
            seconds.append(time.perf_counter() - started)
    peak = torch.cuda.max_memory_allocated() / 1e9
    del layers, x, hidden
    gc.collect()
    torch.cuda.empty_cache()
    return statistics.median(seconds), peak


def measure(case: Case, *, iterations: int, warmup: int) -> Result:
    """The entry and the bare layers of `case`, one after the other in this process."""
    # megatron-core loads here, so that a machine without CUDA is refused before its import warnings.
    from train_entry.megatron.throughput import one_gpu_config, time_iterations

    shape, mbs = case.shape, case.micro_batch_size
    config = one_gpu_config(shape, micro_batch_size=mbs, microbatches=case.microbatches, recompute="none")
    entry = time_iterations(config, iterations=iterations, warmup=warmup, optimizer_step=True)
    entry_tokens = mbs * case.microbatches * shape.seq_length / entry.median_s
    bare_s, bare_gb = bare_layers(shape, micro_batch_size=mbs, iterations=2 * iterations, warmup=warmup + 1)
    layer_flops = model_flops_per_token(shape) - output_layer_flops_per_token(shape)
    return Result(
        case=case,
        entry_tokens_per_s=entry_tokens,
        entry_tflops=entry_tokens * model_flops_per_token(shape) / 1e12,
        entry_memory_gb=entry.peak_memory_gb,
        bare_tflops=mbs * shape.seq_length / bare_s * layer_flops / 1e12,
        bare_memory_gb=bare_gb,
        attention=entry.attention,
    )


def measure_what_fits(case: Case, *, iterations: int, warmup: int) -> Result:
    """measure(case), with one layer fewer after each out-of-memory: the memory model does not count
    the optimizer step's temporaries or the allocator's fragmentation."""
    while True:
        try:
            return measure(case, iterations=iterations, warmup=warmup)
        except torch.cuda.OutOfMemoryError:
            layers = case.shape.num_layers
            if layers == 1:
                raise
            print(f"{case.name}: out of GPU memory with {layers} layers, trying {layers - 1}", file=sys.stderr)
            case = replace(case, shape=case.shape.model_copy(update={"num_layers": layers - 1}))
        gc.collect()
        torch.cuda.empty_cache()


def report(results: list[Result], *, card_tflops: float) -> str:
    """A Markdown table of the results under a line naming the card and the software."""
    import megatron.core

    installed = {name: importlib.util.find_spec(name) is not None for name in ("transformer_engine", "flash_attn")}
    lines = [
        f"{torch.cuda.get_device_name()}: dense bf16 matmul {card_tflops:.0f} TFLOP/s measured (8192^3); "
        f"torch {torch.__version__}, megatron-core {megatron.core.__version__}, "
        + ", ".join(f"{name} {'installed' if found else 'absent'}" for name, found in installed.items()),
        "",
        (
            "| shape | seq | micro-batch x count | entry tokens/s | entry model TFLOP/s | bare layers TFLOP/s "
            "| entry / bare | entry memory GB | bare memory GB | attention |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        case, shape = result.case, result.case.shape
        lines.append(
            f"| {case.name}: {shape.num_layers} layers x {shape.hidden_size} | {shape.seq_length} "
            f"| {case.micro_batch_size} x {case.microbatches} | {result.entry_tokens_per_s / 1e3:.1f} k "
            f"| {result.entry_tflops:.0f} ({result.entry_tflops / card_tflops:.0%} of matmul) | {result.bare_tflops:.0f} "
            f"| {result.entry_tflops / result.bare_tflops:.2f} | {result.entry_memory_gb:.1f} "
            f"| {result.bare_memory_gb:.1f} | {result.attention} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5, help="timed entry iterations per shape (bare: twice)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed iterations first (CUDA, torch.compile)")
    parser.add_argument("--layers-8b", type=int, help="layers of the 8B shape (default: as many as fit)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: benchmarks/full_run_gpu.py measures a CUDA GPU, and this machine has none", file=sys.stderr)
        return 2
    card_tflops = matmul_tflops()
    layers = args.layers_8b or layers_that_fit(LLAMA_3_1_8B, micro_batch_size=1, microbatches=4)
    cases = [
        Case("llama3.1-8b layers", LLAMA_3_1_8B.model_copy(update={"num_layers": layers}), 1, 4),
        Case("0.5B", HALF_B, 4, 8),
    ]
    results = [measure_what_fits(case, iterations=args.iterations, warmup=args.warmup) for case in cases]
    print(report(results, card_tflops=card_tflops))
    return 0


if __name__ == "__main__":
    sys.exit(main())
