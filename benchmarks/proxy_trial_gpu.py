"""A 1B-parameter proxy trial on this machine's GPUs, on one GPU and on all of them (one trial sharded), against a
bare PyTorch loop of the same model: tokens per second and MFU.

The trial is train_entry's own: run_trial on one GPU (fp32 weights and AdamW, bf16 autocast) and run_sharded_trial
on all of them (FSDP2, bf16 compute, fp32 reduction, one NCCL worker per GPU as Ray Train starts them), over the
bundled corpora blended 1:1 by megatron-core, with the LR schedule, gradient clipping, the divergence check (which
reads the loss every step) and an evaluation at the end. The bare loop is the textbook forward / backward / AdamW
step on random tokens made beforehand, on the same model built the same way (load_causal_lm, sharded_causal_lm),
in the same process(es), reading no loss until its end. Each is measured eager and compiled (execution.compile:
each decoder layer and the loss torch.compile'd, train_entry.model.ready_layers), the bare loop likewise; where
torch.compile cannot build a kernel, the compiled rows are left out with a warning saying why. Tokens per second are
those of the steps after --warmup, timed by on_step's clock for the trial (each step has read its loss: the GPU's
work is done) and synchronised for the bare loop. MFU: model FLOPs (sweep.promote.estimate.counts.model_flops_per_token: 6 x the matmul parameters and the
attention, no recomputation counted) over the card's dense bf16 peak x GPUs (--peak-tflops; default the H100 and
H200 SXM datasheets' 989, as sweep.promote.estimate.clusters has it).

Each trial row also sets the trial's peak memory on a GPU (torch.cuda.max_memory_reserved: what the caching
allocator held at its most, fragmentation included; rank 0's on the sharded trial) beside the estimate the tool
sizes trials by (sweep.spec.trial_memory, for that trial's batch and number of GPUs, its 6 GB reserve included):
a measured peak above the estimate means the tool would put a trial on GPUs it does not fit.

The model is Llama 3.2 1B's shape (16 layers x 2048, FFN 8192, 32 heads / 8 KV, vocabulary 128256, tied
embeddings: 1.24 B parameters), randomly initialised (no download: the GPU machine may have no internet) and saved
in bf16; the corpora are tokenised by a 4096-entry BPE trained on the bundled general corpus (the output layer
still spans the whole vocabulary). 4 sequences of 2048 tokens per GPU and step (the sharded trial's batch is 4 x
GPUs): without activation checkpointing sweep.spec.trial_memory puts the one-GPU trial at ~54 GB.

    .venv/bin/python benchmarks/proxy_trial_gpu.py [--steps 20] [--warmup 5] [--json PATH] [--work DIR]

Each row is printed (and --json rewritten) the moment it is measured. On a machine of one GPU the sharded row is
one FSDP worker against the same bare loop: what the sharded path costs where it is not needed. Without a CUDA GPU
it exits with code 2.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from sweep.promote.estimate.counts import model_flops_per_token
from sweep.spec.trial_memory import GB, trial_memory
from train_entry.data.corpus import Corpus
from train_entry.data.indexed import build_indexed
from train_entry.data.tokenizer import train_bpe
from train_entry.group import Group
from train_entry.loop import next_token_loss
from train_entry.megatron.config import ModelShape
from train_entry.mix import MixRatio
from train_entry.model import Runtime, compiles, load_causal_lm, ready_layers
from train_entry.proxy import run_trial
from train_entry.sharded.fsdp import sharded_causal_lm
from train_entry.sharded.trial import run_sharded_trial
from train_entry.trial_config import BaseLosses, CorpusPrefixes, ProxyConfig, TrialConfig

REPO = Path(__file__).resolve().parents[1]
LLAMA_3_2_1B = ModelShape(
    num_layers=16, hidden_size=2048, ffn_hidden_size=8192, num_attention_heads=32, num_query_groups=8,
    vocab_size=128256, seq_length=2048, untie_embeddings_and_output_weights=False,
)  # fmt: skip
SEQUENCES_PER_GPU = 4
BPE_VOCAB = 4096
PEAK_TFLOPS = 989.0
"""H100 / H200 SXM dense bf16 (sweep.promote.estimate.clusters)."""


@dataclass(frozen=True)
class Row:
    what: str
    gpus: int
    trial_tokens_per_s: float
    bare_tokens_per_s: float
    trial_mfu: float
    bare_mfu: float
    trial_peak_gb: float
    """The trial's peak memory on one GPU (the allocator's reserved bytes; rank 0's when sharded)."""
    estimate_gb: float
    """sweep.spec.trial_memory's figure for the same trial: what the tool sizes trials by."""

    @property
    def ratio(self) -> float:
        return self.trial_tokens_per_s / self.bare_tokens_per_s


@dataclass(frozen=True)
class Measured:
    """One path's figures: the trial's and the bare loop's tokens per second, the trial's peak memory per GPU."""

    trial_tokens_per_s: float
    bare_tokens_per_s: float
    trial_peak_gb: float


class StepClock:
    """on_step's clock: the time of each step after the first `warmup`."""

    def __init__(self, warmup: int) -> None:
        self.warmup, self.times = warmup, []

    def __call__(self, step: int, train_loss: float) -> None:
        if step >= self.warmup:
            self.times.append(time.perf_counter())

    def tokens_per_s(self, tokens_per_step: int) -> float:
        return (len(self.times) - 1) * tokens_per_step / (self.times[-1] - self.times[0])


def setup(work: Path, *, steps: int, gpus: int) -> TrialConfig:
    """The tokenizer, the indexed corpora and the 1B base under `work`, and the one-GPU trial's config."""
    cache = work / "cache"
    corpus = {(side, split): Corpus.of(REPO / "data" / name / f"{split}.jsonl") for side, name in
              (("general", "general_en"), ("domain", "ecommerce")) for split in ("train", "valid")}  # fmt: skip
    tokenizer_dir = train_bpe([corpus["general", "train"]], BPE_VOCAB, cache)
    prefixes = {
        split: CorpusPrefixes(
            **{side: build_indexed(corpus[side, split], tokenizer_dir, cache).prefix for side in ("general", "domain")}
        )
        for split in ("train", "valid")
    }
    base_dir = work / "llama-1b"
    if not (base_dir / "config.json").is_file():
        _save_base(base_dir, tokenizer_dir)
    proxy = ProxyConfig(
        steps=steps, seq_len=LLAMA_3_2_1B.seq_length, batch_size=SEQUENCES_PER_GPU, warmup_steps=2,
        eval_interval=steps, eval_sequences=SEQUENCES_PER_GPU * gpus,
    )  # fmt: skip
    return TrialConfig(
        lr_fraction=0.1, mix=MixRatio(1, 1), base_dir=str(base_dir), tokenizer_dir=str(tokenizer_dir), max_lr=3e-4,
        # Gain and forgetting are not what is measured here: any positive base losses will do.
        base_losses=BaseLosses(domain_loss=1.0, general_loss=1.0),
        final_base_losses=BaseLosses(domain_loss=1.0, general_loss=1.0), train=prefixes["train"], valid=prefixes["valid"],
        proxy=proxy, output_dir=str(work / "trial-1"), seed=0,
    )  # fmt: skip


def _save_base(base_dir: Path, tokenizer_dir: Path) -> None:
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    shape = LLAMA_3_2_1B
    config = LlamaConfig(
        vocab_size=shape.vocab_size, hidden_size=shape.hidden_size, intermediate_size=shape.ffn_hidden_size,
        num_hidden_layers=shape.num_layers, num_attention_heads=shape.num_attention_heads,
        num_key_value_heads=shape.num_query_groups, max_position_embeddings=shape.seq_length,
        rope_theta=shape.rotary_base, tie_word_embeddings=True, torch_dtype="bfloat16",
    )  # fmt: skip
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(base_dir)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(base_dir)
    del model
    torch.cuda.empty_cache()


def bare_loop(model: torch.nn.Module, config: TrialConfig, runtime: Runtime, *, warmup: int) -> float:
    """Tokens per second of the textbook loop on `model` (this process's part of the batch), random tokens."""
    proxy = config.proxy
    tokens = torch.randint(0, BPE_VOCAB, (proxy.steps, proxy.batch_size, proxy.seq_len + 1), device=runtime.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.peak_lr, fused=True)
    model.train()
    for step in range(proxy.steps):
        if step == warmup:
            torch.cuda.synchronize()
            started = time.perf_counter()
        with runtime.autocast():
            loss = next_token_loss(model, tokens[step, :, :-1], tokens[step, :, 1:], compiled=runtime.compiled)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    return (proxy.steps - warmup) * proxy.batch_size * proxy.seq_len / (time.perf_counter() - started)


def one_gpu(config: TrialConfig, *, warmup: int) -> Measured:
    """The trial and the bare loop on one GPU."""
    clock = StepClock(warmup)
    torch.cuda.reset_peak_memory_stats()
    run_trial(config, lambda metrics: False, on_step=clock)
    trial = clock.tokens_per_s(config.proxy.batch_size * config.proxy.seq_len)
    peak_gb = torch.cuda.max_memory_reserved() / GB
    _free()
    runtime = Runtime.detect(compiled=config.compile)
    model = load_causal_lm(config.base_dir, runtime)
    ready_layers(model, runtime, activation_checkpointing=False)
    bare = bare_loop(model, config, runtime, warmup=warmup)
    _free()
    return Measured(trial, bare, peak_gb)


def _sharded_worker(rank: int, gpus: int, config_json: str, warmup: int, out: str) -> None:
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", store=dist.FileStore(f"{out}.store", gpus), rank=rank, world_size=gpus)
    try:
        config = TrialConfig.model_validate_json(config_json)
        clock = StepClock(warmup)
        torch.cuda.reset_peak_memory_stats()
        run_sharded_trial(config, lambda metrics: False, on_step=clock)
        trial = clock.tokens_per_s(config.proxy.batch_size * config.proxy.seq_len)
        peak_gb = torch.cuda.max_memory_reserved() / GB
        _free()
        runtime = Runtime.for_shard(compiled=config.compile)
        model = sharded_causal_lm(
            config.base_dir, runtime, Group.default(runtime.device), activation_checkpointing=False
        )
        # Each worker's part of the batch, as in the trial: the workers together take the trial's whole batch.
        share = config.model_copy(update={"proxy": config.proxy.model_copy(update={"batch_size": SEQUENCES_PER_GPU})})
        bare = bare_loop(model, share, runtime, warmup=warmup) * gpus
        if rank == 0:
            Path(out).write_text(json.dumps(asdict(Measured(trial, bare, peak_gb))))
    finally:
        dist.destroy_process_group()


def all_gpus(config: TrialConfig, work: Path, *, gpus: int, warmup: int) -> Measured:
    """One trial sharded over `gpus` GPUs, batch SEQUENCES_PER_GPU x gpus, and the bare loop likewise."""
    proxy = config.proxy.model_copy(update={"batch_size": SEQUENCES_PER_GPU * gpus})
    sharded = config.model_copy(update={"proxy": proxy, "output_dir": str(work / f"trial-{gpus}")})
    out = work / f"sharded-{gpus}-{config.compile}.json"
    out.unlink(missing_ok=True)
    Path(f"{out}.store").unlink(missing_ok=True)
    mp.start_processes(
        _sharded_worker, args=(gpus, sharded.model_dump_json(), warmup, str(out)), nprocs=gpus, start_method="spawn"
    )
    return Measured(**json.loads(out.read_text()))


def _free() -> None:
    gc.collect()
    torch.cuda.empty_cache()


def estimate_gb(gpus: int) -> float:
    """What sweep.spec.trial_memory puts on each GPU of the benchmark's trial over `gpus` GPUs."""
    batch_size = SEQUENCES_PER_GPU * gpus
    return trial_memory(LLAMA_3_2_1B, batch_size=batch_size, workers=gpus, activation_checkpointing=False).total_gb


def row(what: str, gpus: int, measured: Measured, peak_tflops: float) -> Row:
    peak_flops = gpus * peak_tflops * 1e12
    flops = model_flops_per_token(LLAMA_3_2_1B)
    trial, bare = measured.trial_tokens_per_s, measured.bare_tokens_per_s
    mfu = trial * flops / peak_flops, bare * flops / peak_flops
    return Row(what, gpus, trial, bare, *mfu, trial_peak_gb=measured.trial_peak_gb, estimate_gb=estimate_gb(gpus))


COLUMNS = ("trial", "GPUs", "trial tokens/s", "bare tokens/s", "trial / bare", "trial MFU", "bare MFU",
           "peak GB per GPU (estimate)")  # fmt: skip
TABLE_HEADER = f"| {' | '.join(COLUMNS)} |\n|{'---|' * len(COLUMNS)}"


def table_row(measured: Row) -> str:
    return (
        f"| {measured.what} | {measured.gpus} | {measured.trial_tokens_per_s:,.0f} | {measured.bare_tokens_per_s:,.0f} "
        f"| {measured.ratio:.2f} | {measured.trial_mfu:.1%} | {measured.bare_mfu:.1%} "
        f"| {measured.trial_peak_gb:.1f} ({measured.estimate_gb:.1f}) |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="steps per loop, the timed ones after --warmup")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first (CUDA, the allocator)")
    parser.add_argument("--peak-tflops", type=float, default=PEAK_TFLOPS, help="the card's dense bf16 peak")
    parser.add_argument("--json", type=Path, help="also write the rows here, for benchmarks/gpu_check.sh")
    parser.add_argument("--work", type=Path, help="where the tokenizer, corpora and base go (default: a temp dir)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: benchmarks/proxy_trial_gpu.py measures CUDA GPUs, and this machine has none", file=sys.stderr)
        return 2
    gpus = torch.cuda.device_count()
    work = args.work or Path(tempfile.mkdtemp(prefix="proxy-trial-gpu-"))
    config = setup(work, steps=args.steps, gpus=gpus)
    print(f"{torch.cuda.get_device_name()} x {gpus}, 1.24B parameters, {SEQUENCES_PER_GPU} x 2048 tokens per GPU, "
          f"MFU of {args.peak_tflops:g} TFLOP/s per GPU", flush=True)  # fmt: skip
    print(TABLE_HEADER)
    rows: list[Row] = []
    variants = [("", config)]
    if compiles("cuda"):  # the trial's own preflight, asked once per process; it warns why where it cannot
        variants.append((", compiled", config.model_copy(update={"compile": True})))
    # The sharded trial runs on a one-GPU machine too: its FSDP path (one worker) against the one-process path.
    measures = [(f"one GPU{how}", lambda c=c: (1, one_gpu(c, warmup=args.warmup))) for how, c in variants]
    measures += [
        (f"sharded (FSDP2){how}", lambda c=c: (gpus, all_gpus(c, work, gpus=gpus, warmup=args.warmup)))
        for how, c in variants
    ]
    for what, measure in measures:
        rows.append(row(what, *measure(), args.peak_tflops))
        print(table_row(rows[-1]), flush=True)
        _write(args.json, rows)
    return 0


def _write(path: Path | None, rows: list[Row]) -> None:
    if path is not None:  # rewritten after every row: a run stopped early keeps what it measured
        path.write_text(
            json.dumps([asdict(measured) | {"ratio": measured.ratio} for measured in rows], indent=2) + "\n"
        )


if __name__ == "__main__":
    sys.exit(main())
