"""What downstream scores cost per proxy trial on a ~0.16 B base on one GPU: the seconds of lm-evaluation-harness on
a trial's model (evaluation.downstream) beside the seconds of its training steps.

One proxy trial of train_entry's own (run_trial: the bundled corpora blended 1:1 by megatron-core, fp32 weights and
AdamW under bf16 autocast, its final figures on the validation pool) on a Llama-shaped base of 12 layers x 1024,
FFN 2816, 16 heads, a 4096-entry BPE trained on the bundled general corpus (0.158 B parameters, tied embeddings),
randomly initialised (no download: the GPU machine may have no internet), then scored as a sweep scores it on the
bundled task (data/tasks/general_mc: 40 items of 4 choices, 160 log-likelihood requests) or --task, --limit examples.
A random base scores at chance: what is measured is the time, not the score. The row gives the trial's training
seconds (TrialUsage.train_seconds), its downstream seconds (TrialUsage.downstream_seconds), their ratio, and the
downstream seconds per 1 000 log-likelihood requests (examples x choices), from which another task's cost follows.

    .venv/bin/python benchmarks/downstream_cost.py [--steps 50] [--task YAML] [--limit N] [--json PATH] [--work DIR]

Without a CUDA GPU it exits with code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from train_entry.data.corpus import Corpus
from train_entry.data.indexed import build_indexed
from train_entry.data.tokenizer import train_bpe
from train_entry.downstream.tasks import DownstreamPlan, read_task
from train_entry.mix import MixRatio
from train_entry.proxy import run_trial
from train_entry.trial_config import BaseLosses, CorpusPrefixes, ProxyConfig, TrialConfig

REPO = Path(__file__).resolve().parents[1]
TASK = REPO / "data" / "tasks" / "general_mc" / "general_mc.yaml"
BPE_VOCAB = 4096
SHAPE = {"hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 12, "num_attention_heads": 16,
         "num_key_value_heads": 16, "max_position_embeddings": 1024}  # fmt: skip
SEQ_LEN, BATCH = 1024, 8


@dataclass(frozen=True)
class Row:
    parameters: int
    steps: int
    train_seconds: float
    requests: int
    downstream_seconds: float

    @property
    def ratio(self) -> float:
        return self.downstream_seconds / self.train_seconds

    @property
    def per_thousand(self) -> float:
        return 1000.0 * self.downstream_seconds / self.requests


COLUMNS = ("base parameters", "trial steps", "train s", "requests", "downstream s", "downstream / train",
           "s per 1 000 requests")  # fmt: skip
TABLE_HEADER = f"| {' | '.join(COLUMNS)} |\n|{'---|' * len(COLUMNS)}"


def table_row(row: Row) -> str:
    cells = (f"{row.parameters / 1e9:.3f} B", str(row.steps), f"{row.train_seconds:.1f}", f"{row.requests:,}",
             f"{row.downstream_seconds:.1f}", f"{row.ratio:.2f}", f"{row.per_thousand:.2f}")  # fmt: skip
    return f"| {' | '.join(cells)} |"


def requests(plan: DownstreamPlan) -> int:
    """Log-likelihood requests the plan's scoring takes: per task, its examples (at most the limit) times their
    choices, read from the task's data file, whose `doc_to_choice` is a list field (the bundled task's form)."""
    total = 0
    for task in plan.tasks:
        files = task.config["dataset_kwargs"]["data_files"]
        first = next(iter(files.values() if isinstance(files, dict) else [files]))[0]
        examples = [json.loads(line) for line in Path(first).read_text().splitlines() if line.strip()]
        examples = examples[: plan.limit] if plan.limit else examples
        field = task.config["doc_to_choice"].strip("{} ")
        total += sum(len(example[field]) for example in examples)
    return total


def setup(work: Path, *, steps: int, plan: DownstreamPlan) -> tuple[TrialConfig, int]:
    """The corpora, the tokenizer and the base under `work`; the trial's config and the base's parameters."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    cache = work / "cache"
    corpus = {(side, split): Corpus.of(REPO / "data" / name / f"{split}.jsonl") for side, name in
              (("general", "general_en"), ("domain", "ecommerce")) for split in ("train", "valid")}  # fmt: skip
    tokenizer_dir = train_bpe([corpus["general", "train"]], BPE_VOCAB, cache)
    prefixes = {split: CorpusPrefixes(**{side: build_indexed(corpus[side, split], tokenizer_dir, cache).prefix
                                         for side in ("general", "domain")}) for split in ("train", "valid")}  # fmt: skip
    base_dir = work / "base"
    config = LlamaConfig(vocab_size=BPE_VOCAB, tie_word_embeddings=True, torch_dtype="bfloat16", **SHAPE)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    parameters = sum(parameter.numel() for parameter in model.parameters())
    model.save_pretrained(base_dir)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(base_dir)
    proxy = ProxyConfig(steps=steps, seq_len=SEQ_LEN, batch_size=BATCH, warmup_steps=2, eval_interval=steps,
                        eval_sequences=BATCH)  # fmt: skip
    return TrialConfig(
        lr_fraction=0.1, mix=MixRatio(1, 1), base_dir=str(base_dir), tokenizer_dir=str(base_dir), max_lr=3e-4,
        # Gain, forgetting and the drop are not what is measured here: any base figures will do.
        base_losses=BaseLosses(domain_loss=1.0, general_loss=1.0),
        final_base_losses=BaseLosses(domain_loss=1.0, general_loss=1.0), train=prefixes["train"],
        valid=prefixes["valid"], proxy=proxy, downstream=plan, output_dir=str(work / "trial"), seed=0,
    ), parameters  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--task", type=Path, default=TASK)
    parser.add_argument("--metric", default="acc")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("downstream_cost measures a trial on a CUDA GPU and this machine has none", file=sys.stderr)
        return 2
    plan = DownstreamPlan(tasks=[read_task(args.task, args.metric)], limit=args.limit)
    with tempfile.TemporaryDirectory() as scratch:
        config, parameters = setup(args.work or Path(scratch), steps=args.steps, plan=plan)
        result = run_trial(config, lambda metrics: False)
    row = Row(parameters, args.steps, result.usage.train_seconds, requests(plan), result.usage.downstream_seconds)
    print(TABLE_HEADER)
    print(table_row(row))
    if args.json is not None:
        args.json.write_text(json.dumps(asdict(row) | {"ratio": row.ratio, "per_thousand": row.per_thousand}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
