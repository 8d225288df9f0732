"""The megatron-core full-run entry against bare PyTorch layers of the same shape, on this machine's GPU.

Three figures per shape, bf16, each with the FLOPs it counts, each printed as a table row (and
flushed) the moment it is measured, so a run stopped at its time limit keeps what it measured:

  one layer       the entry's decoder layer against a bare PyTorch layer of the same shape, forward
                  and backward of one micro-batch. The entry's is the difference between its models
                  of 2 and of 1 layers over the micro-batches of an iteration (what `sweep promote
                  --calibrate` measures, train_entry.megatron.throughput.time_layer: fp32 gradient
                  accumulation included, optimizer not); the bare one is its stack's time over its
                  layers. FLOPs: 6 x the layer's matrix parameters + 12 x hidden x sequence per token.
  optimizer step  the distributed optimizer's and the LR schedule's step on the whole model, timed apart
                  from the same iterations, and its share of an iteration of REFERENCE_MICROBATCHES
                  micro-batches (the reference 70B plan's per data-parallel rank). Not model FLOPs:
                  elementwise work over every parameter.
  whole iteration the entry's training iteration (embedding, layers, output layer and loss over its
                  micro-batches, then the optimizer step) in model TFLOP/s, output layer included,
                  against the bare layers' TFLOP/s (no embedding, output layer or optimizer).

The bare layers are the same decoder layers written in plain PyTorch (nn.RMSNorm, RoPE, SDPA causal
grouped-query attention, SwiGLU; bf16 weights, forward and backward, no optimizer, eager), timed in
the same process. Model FLOPs follow the plan's convention (sweep.promote.estimate.counts). The card's dense
bf16 matmul rate is measured on 8192^3 products. Shapes: (a) Llama 3.1 8B's layers (hidden 4096,
FFN 14336, 32 heads / 8 KV, vocabulary 128256) at sequence 8192, as many layers as fit the GPU,
micro-batch 1 x 4 per iteration; (b) a 0.5 B model (12 layers x 2048, FFN 5632, 16 heads / 8 KV:
566 M matrix parameters in its layers, vocabulary 32000) at sequence 2048, micro-batch 4 x 8.

    .venv/bin/python benchmarks/full_run_gpu.py [--iterations 5] [--layers-8b N] [--json PATH]

--json writes the figures for benchmarks/gpu_check.sh's summary. Without a CUDA GPU it exits with
code 2 and says so.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from sweep.promote.estimate.counts import model_flops_per_token, output_layer_flops_per_token
from sweep.promote.estimate.memory import memory_per_gpu
from sweep.promote.plan.calibrate import layer_flops_per_token
from sweep.scale import kv_width
from sweep.target.families.llama import LLAMA_3_1_8B
from train_entry.megatron.config import ModelShape, Parallelism

REFERENCE_MICROBATCHES = 96
"""Micro-batches per optimizer step and data-parallel rank of the reference 70B plan (1440 sequences over
DP 15, micro-batch 1): the optimizer step's share of an iteration is quoted at this count, not the benchmark's."""
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
class Row:
    """One measured figure of one shape, as the table prints it and the --json file keeps it."""

    shape: str
    what: str
    entry: str
    bare: str
    ratio: float | None
    """Entry over bare in FLOP/s (the bare side's time over the entry's for the same work); None for the optimizer."""
    flops: str
    """What the FLOP rates count."""
    seconds: float
    """The entry's side: seconds per layer and micro-batch, per optimizer step, or per iteration."""


COLUMNS = ("shape", "measure", "entry", "bare PyTorch", "entry / bare", "FLOPs counted")


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


def measure_layer(case: Case, *, iterations: int, warmup: int) -> Row:
    """One layer of the case's shape: the entry's (what --calibrate times) against a bare layer's."""
    from train_entry.megatron.throughput import time_layer

    shape, mbs = case.shape, case.micro_batch_size
    entry = time_layer(shape, micro_batch_size=mbs, recompute="none", iterations=iterations, warmup=warmup)
    bare_s, _ = bare_layers(shape, micro_batch_size=mbs, iterations=2 * iterations, warmup=warmup + 1)
    bare_layer_s = bare_s / shape.num_layers
    flops = layer_flops_per_token(shape, "none") * mbs * shape.seq_length
    return Row(
        shape=case.name,
        what=f"one layer, micro-batch {mbs} x {shape.seq_length}",
        entry=f"{entry.seconds_per_layer * 1e3:.2f} ms = {flops / entry.seconds_per_layer / 1e12:.0f} TFLOP/s",
        bare=f"{bare_layer_s * 1e3:.2f} ms = {flops / bare_layer_s / 1e12:.0f} TFLOP/s",
        ratio=bare_layer_s / entry.seconds_per_layer,
        flops=f"{flops / 1e12:.2f} T per layer and micro-batch (6 x matrix params + 12 x h x s per token)",
        seconds=entry.seconds_per_layer,
    )


def measure_iteration(case: Case, *, iterations: int, warmup: int) -> tuple[Row, Row]:
    """The case's whole training iteration against its bare layers, and the optimizer step timed within it."""
    from train_entry.megatron.throughput import one_gpu_config, time_iterations

    shape, mbs, count = case.shape, case.micro_batch_size, case.microbatches
    config = one_gpu_config(shape, micro_batch_size=mbs, microbatches=count, recompute="none")
    entry = time_iterations(config, iterations=iterations, warmup=warmup, optimizer_step=True)
    bare_s, bare_gb = bare_layers(shape, micro_batch_size=mbs, iterations=2 * iterations, warmup=warmup + 1)
    tokens = mbs * count * shape.seq_length
    entry_tflops = tokens * model_flops_per_token(shape) / entry.median_s / 1e12
    layer_flops = model_flops_per_token(shape) - output_layer_flops_per_token(shape)
    bare_tflops = mbs * shape.seq_length * layer_flops / bare_s / 1e12
    iteration = Row(
        shape=case.name,
        what=f"whole iteration, {count} micro-batches of {mbs} x {shape.seq_length}, {shape.num_layers} layers",
        entry=(
            f"{entry_tflops:.0f} TFLOP/s, {tokens / entry.median_s / 1e3:.1f} k tokens/s, {entry.peak_memory_gb:.1f} GB"
        ),
        bare=f"{bare_tflops:.0f} TFLOP/s (layers only), {bare_gb:.1f} GB",
        ratio=entry_tflops / bare_tflops,
        flops=f"{model_flops_per_token(shape) / 1e9:.1f} G per token, output layer included ({entry.attention})",
        seconds=entry.median_s,
    )
    optimizer_s = entry.optimizer_median_s
    per_microbatch = (entry.median_s - optimizer_s) / count
    share = optimizer_s / (optimizer_s + REFERENCE_MICROBATCHES * per_microbatch)
    optimizer = Row(
        shape=case.name,
        what=f"optimizer step, {entry.parameters / 1e9:.2f} B parameters",
        entry=f"{optimizer_s * 1e3:.1f} ms: {optimizer_s / entry.median_s:.1%} of this iteration, "
        f"{share:.1%} of one of {REFERENCE_MICROBATCHES} micro-batches",
        bare="-",
        ratio=None,
        flops="none counted: elementwise over every parameter, not model FLOPs",
        seconds=optimizer_s,
    )
    return iteration, optimizer


def measure_what_fits(case: Case, *, iterations: int, warmup: int) -> tuple[Row, Row]:
    """measure_iteration(case), with one layer fewer after each out-of-memory: the memory model does not count
    the optimizer step's temporaries or the allocator's fragmentation."""
    while True:
        try:
            return measure_iteration(case, iterations=iterations, warmup=warmup)
        except torch.cuda.OutOfMemoryError:
            layers = case.shape.num_layers
            if layers == 1:
                raise
            print(f"{case.name}: out of GPU memory with {layers} layers, trying {layers - 1}", file=sys.stderr)
            case = replace(case, shape=case.shape.model_copy(update={"num_layers": layers - 1}))
        gc.collect()
        torch.cuda.empty_cache()


def header(card_tflops: float) -> str:
    """The line naming the card and the software, and the table's head."""
    import megatron.core

    from train_entry.megatron.fusions import fusions_usable

    installed = {name: importlib.util.find_spec(name) is not None for name in ("transformer_engine", "flash_attn")}
    return "\n".join(
        [
            f"{torch.cuda.get_device_name()}: dense bf16 matmul {card_tflops:.0f} TFLOP/s measured (8192^3); "
            f"torch {torch.__version__}, megatron-core {megatron.core.__version__}, "
            + ", ".join(f"{name} {'installed' if found else 'absent'}" for name, found in installed.items())
            + f", megatron-core's compiled fusions {'on' if fusions_usable('cuda') else 'off'}",
            "",
            "| " + " | ".join(COLUMNS) + " |",
            "|" + "---|" * len(COLUMNS),
        ]
    )


def table_row(row: Row) -> str:
    ratio = "-" if row.ratio is None else f"{row.ratio:.2f}"
    return f"| {row.shape} | {row.what} | {row.entry} | {row.bare} | {ratio} | {row.flops} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5, help="timed entry iterations per figure (bare: twice)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed iterations first (CUDA, torch.compile)")
    parser.add_argument("--layers-8b", type=int, help="layers of the 8B shape (default: as many as fit)")
    parser.add_argument("--json", type=Path, help="also write the figures here, for benchmarks/gpu_check.sh")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: benchmarks/full_run_gpu.py measures a CUDA GPU, and this machine has none", file=sys.stderr)
        return 2
    print(header(matmul_tflops()), flush=True)
    layers = args.layers_8b or layers_that_fit(LLAMA_3_1_8B, micro_batch_size=1, microbatches=4)
    cases = [
        Case("llama3.1-8b layers", LLAMA_3_1_8B.model_copy(update={"num_layers": layers}), 1, 4),
        Case("0.5B", HALF_B, 4, 8),
    ]
    rows: list[Row] = []
    for case in cases:
        for measured in (
            (measure_layer(case, iterations=args.iterations, warmup=args.warmup),),
            measure_what_fits(case, iterations=args.iterations, warmup=args.warmup),
        ):
            for row in measured:
                rows.append(row)
                print(table_row(row), flush=True)
                if args.json is not None:  # rewritten after every row: a run stopped early keeps what it measured
                    args.json.write_text(json.dumps([asdict(row) for row in rows], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
