"""The full-run entry's per-set evaluation on this machine's GPU: the base's losses at iteration 0, domain_gain and
forgetting at each evaluation, the forgetting watch's line for each, and what an evaluation costs against a training
iteration.

Two runs of the megatron-core entry (train_entry.megatron.train), as a continued pretraining is run: a base
pretrained on the bundled general English corpus alone (--base-iters iterations, its checkpoint saved), then the
continued run from that checkpoint on the reference recipe's blend (general 45 %, non-English 5 %, domain 50 %:
1:1 with 10 % of the general side non-English) at a tenth of the base's peak LR, with the plan's three validation sets
(general, domain, non-English held-out text, each its own GPTDataset) evaluated at iteration 0 and every
--eval-interval iterations. Its evaluations go to the job's forgetting watch (train_entry.fullrun.job_watch.JobWatch,
what a Ray job's rank 0 runs; no W&B), held to a flat upper bound of --bound standing in for a plan's predicted
trajectory: the watch's lines are the machinery's, the bound is not a prediction.

An evaluation's cost: the entry logs every iteration here (log_interval 1), so an evaluating iteration's span from the
previous iteration's report to the watch's call is its training step and its evaluation; the step is the iteration's
own reported time, and the rest is the evaluation (eval_iters global batches of each set, forward only, the plan's
default eval_iters). Its share of training at a plan's interval is that over interval x the step.

The model: 12 layers x 1024 (FFN 2816, 16 heads / 8 KV), vocabulary a 4096-entry BPE trained on the general corpus,
sequence 1024, global batch 32 of micro-batches of 8, bf16.

    .venv/bin/python benchmarks/full_run_evaluation_gpu.py [--json PATH] [--work DIR] [--base-iters 150]

Without a CUDA GPU it exits with code 2 in one line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from train_entry.data.corpus import Corpus
from train_entry.data.indexed import build_indexed
from train_entry.data.tokenizer import train_bpe
from train_entry.fullrun.evaluations import WatchConfig
from train_entry.fullrun.job_watch import JobWatch
from train_entry.fullrun.watch import PredictedTrajectory
from train_entry.megatron.config import FullRunConfig

REPO = Path(__file__).resolve().parents[1]
CORPORA = {"general": "general_en", "non_english": "general_multi", "domain": "ecommerce"}
"""The bundled corpora behind each side (data/README.md)."""
BLEND = {"general": 0.45, "non_english": 0.05, "domain": 0.5}
"""The reference recipe's 1:1 general : domain with 10 % of the general side non-English (DESIGN.md)."""
NON_ENGLISH_SHARE = BLEND["non_english"] / (BLEND["general"] + BLEND["non_english"])
MODEL = {
    "num_layers": 12, "hidden_size": 1024, "ffn_hidden_size": 2816, "num_attention_heads": 16, "num_query_groups": 8,
    "vocab_size": 4096, "seq_length": 1024,
}  # fmt: skip
BASE_LR = 1e-3
"""The base's own pretraining peak LR, as benchmarks/gpu_sweep.py's base of the same width has it."""
LR_FRACTION = 0.1
"""The reference recipe's continued-pretraining peak LR: a tenth of the base's (DESIGN.md)."""
PLAN_EVAL_INTERVAL = 2080
"""The 70B reference plan's --eval-interval (its save interval, tests/sweep/promote/plan/expected/llama3.1-70b), at
which the evaluation's share of training is also quoted."""


@dataclass
class Timeline:
    """When each report and each watch call happened, by iteration, and each iteration's own reported step time."""

    reported: dict[int, float] = field(default_factory=dict)
    step_seconds: dict[int, float] = field(default_factory=dict)
    evaluated: dict[int, float] = field(default_factory=dict)

    def evaluation_seconds(self) -> dict[int, float]:
        """Each evaluation's seconds after iteration 0: its span from the previous report less its own step."""
        return {
            step: at - self.reported[step - 1] - self.step_seconds[step]
            for step, at in self.evaluated.items()
            if step - 1 in self.reported and step in self.step_seconds
        }


class TimedWatch:
    """The job's forgetting watch, its calls timed: the evaluator train() hands each evaluation to."""

    def __init__(self, watch: JobWatch, timeline: Timeline) -> None:
        self.watch, self.timeline = watch, timeline

    def evaluate(self, step: int, losses: list[float]) -> bool:
        self.timeline.evaluated[step] = time.perf_counter()
        return self.watch.evaluate(step, losses)

    def state(self) -> dict[str, Any]:
        return self.watch.state()

    def restore(self, state: dict[str, Any]) -> None:
        self.watch.restore(state)


def indexed_data(work: Path) -> tuple[Path, dict[str, str]]:
    """The BPE and every corpus's training and held-out text as Megatron indexed datasets: prefixes by
    "<side>" and "<side>_valid"."""
    cache = work / "data"
    data = REPO / "data"
    tokenizer = train_bpe([Corpus.of(data / CORPORA["general"] / "train.jsonl")], MODEL["vocab_size"], cache)
    prefixes = {}
    for side, folder in CORPORA.items():
        for suffix, split in (("", "train"), ("_valid", "valid")):
            prefixes[side + suffix] = build_indexed(Corpus.of(data / folder / f"{split}.jsonl"), tokenizer, cache).prefix
    return tokenizer, prefixes


def base_config(work: Path, tokenizer: Path, prefixes: dict[str, str], *, iterations: int) -> FullRunConfig:
    """The base's pretraining: the general corpus alone, no evaluation, one checkpoint at its end."""
    return FullRunConfig.model_validate(
        {
            "model": MODEL,
            "parallelism": {"global_batch_size": 32, "micro_batch_size": 8},
            "optimization": {
                "lr": BASE_LR, "min_lr": BASE_LR / 10, "warmup_iters": max(1, iterations // 10),
                "train_iters": iterations,
            },  # fmt: skip
            "data": {
                "blend": [{"weight": 1.0, "prefix": prefixes["general"], "name": "general"}],
                "tokenizer": str(tokenizer),
                "cache_dir": str(work / "index-cache"),
                "num_workers": 0,
            },
            "checkpoint": {"save_dir": str(work / "base"), "save_interval": iterations},
            "log_interval": max(1, iterations // 5),
        }
    )


def continued_config(
    work: Path, tokenizer: Path, prefixes: dict[str, str], *, base: str, iterations: int, eval_interval: int
) -> FullRunConfig:
    """The continued run from `base` on the reference blend, its three validation sets evaluated apart."""
    lr = LR_FRACTION * BASE_LR
    return FullRunConfig.model_validate(
        {
            "model": MODEL,
            "parallelism": {"global_batch_size": 32, "micro_batch_size": 8},
            "optimization": {"lr": lr, "min_lr": lr / 10, "warmup_iters": 2, "train_iters": iterations},
            "data": {
                "blend": [{"weight": weight, "prefix": prefixes[side], "name": side} for side, weight in BLEND.items()],
                "tokenizer": str(tokenizer),
                "cache_dir": str(work / "index-cache"),
                "num_workers": 0,
                "valid": [{"side": side, "prefix": prefixes[f"{side}_valid"]} for side in CORPORA],
                "non_english_share": NON_ENGLISH_SHARE,
            },
            "checkpoint": {"save_dir": str(work / "continued"), "save_interval": iterations, "base_dir": base},
            "log_interval": 1,
            "eval_interval": eval_interval,
        }
    )


def watch_config(config: FullRunConfig, *, bound: float) -> WatchConfig:
    """The watch a plan would give this run's job, held to a flat `bound` over the run's tokens."""
    tokens_per_iteration = config.parallelism.global_batch_size * config.model.seq_length
    end = config.optimization.train_iters * tokens_per_iteration
    points = [{"tokens": tokens, "forgetting": bound, "forgetting_upper": bound} for tokens in (0.0, float(end))]
    return WatchConfig(
        sets=[item.side for item in config.data.valid],
        non_english_share=config.data.non_english_share,
        tokens_per_iteration=tokens_per_iteration,
        prediction=PredictedTrajectory(
            source=f"a flat bound of {bound:g} standing in for a plan's prediction", level=0.9, points=points
        ),
    )


def figures(config: FullRunConfig, watch: JobWatch, lines: list[str], timeline: Timeline) -> dict[str, Any]:
    """What the continued run measured and what its evaluations cost, from the watch's record and the timeline."""
    evaluation = timeline.evaluation_seconds()
    step = statistics.median(timeline.step_seconds[s] for s in range(2, config.optimization.train_iters + 1))
    each = statistics.median(evaluation.values()) if evaluation else None
    base = watch.evaluations.base
    return {
        "base_losses": None if base is None else {"domain": base.domain_loss, "general": base.general_loss},
        "evaluations": [
            {"iteration": e.metrics.step, "domain_gain": e.metrics.domain_gain, "forgetting": e.metrics.forgetting}
            for e in watch.evaluations.watched
        ],
        "watch_lines": [line for line in lines if line.startswith("watch ")],
        "sets": [item.side for item in config.data.valid],
        "eval_iters": config.eval_iters,
        "step_seconds": step,
        "evaluation_seconds": each,
        "evaluation_in_steps": None if each is None else each / step,
        "share_at_plan_interval": None if each is None else each / (each + PLAN_EVAL_INTERVAL * step),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    from train_entry.megatron.train import StepMetrics, single_gpu_job, train

    work = (args.work or Path(tempfile.mkdtemp(prefix="full-run-evaluation-"))).resolve()
    started = time.perf_counter()
    tokenizer, prefixes = indexed_data(work)
    print(f"data: BPE and 6 indexed corpora in {time.perf_counter() - started:.0f} s", flush=True)
    base = base_config(work, tokenizer, prefixes, iterations=args.base_iters)
    with single_gpu_job():
        pretrained = train(base)
    print(f"base: {args.base_iters} iterations on general text in {pretrained.wall_seconds:.0f} s, "
          f"training loss {pretrained.train_loss:.3f}", flush=True)  # fmt: skip
    config = continued_config(
        work, tokenizer, prefixes, base=pretrained.checkpoints[-1], iterations=args.iterations,
        eval_interval=args.eval_interval,
    )  # fmt: skip
    lines: list[str] = []
    watch = JobWatch(watch_config(config, bound=args.bound), None, name="benchmark", directory=work, log=lines.append)
    timeline = Timeline()

    def reported(metrics: StepMetrics) -> None:
        timeline.reported[metrics.iteration] = time.perf_counter()
        timeline.step_seconds[metrics.iteration] = metrics.seconds_per_iteration

    with single_gpu_job():
        train(config, on_log=reported, evaluator=TimedWatch(watch, timeline))
    return figures(config, watch, lines, timeline)


def report(found: dict[str, Any]) -> str:
    """The figures as a person reads them."""
    base = found["base_losses"]
    shown = [f"sets: {', '.join(found['sets'])}; eval_iters {found['eval_iters']}"]
    shown.append(
        "base losses at iteration 0: none" if base is None
        else f"base losses at iteration 0: domain {base['domain']:.4f}, general {base['general']:.4f}"
    )  # fmt: skip
    shown += [f"  {line}" for line in found["watch_lines"]]
    if found["evaluation_seconds"] is None:
        shown.append("no evaluation after iteration 0 was timed")
    else:
        shown.append(
            f"an evaluation: {found['evaluation_seconds'] * 1e3:.0f} ms, {found['evaluation_in_steps']:.2f} training "
            f"iterations ({found['step_seconds'] * 1e3:.0f} ms each); at the 70B plan's interval of "
            f"{PLAN_EVAL_INTERVAL} iterations, {found['share_at_plan_interval']:.2%} of the run"
        )
    return "\n".join(shown)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures here, for benchmarks/gpu_check.sh")
    parser.add_argument("--work", type=Path, help="where the data and checkpoints go (default: a temp dir)")
    parser.add_argument("--base-iters", type=int, default=150, help="the base's pretraining iterations")
    parser.add_argument("--iterations", type=int, default=40, help="the continued run's iterations")
    parser.add_argument("--eval-interval", type=int, default=10, help="iterations between evaluations")
    parser.add_argument("--bound", type=float, default=0.05, help="the watch's flat forgetting bound")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("full_run_evaluation_gpu: this machine has no CUDA GPU; run it on a GPU machine", file=sys.stderr)
        return 2
    print(f"{torch.cuda.get_device_name()}: the full-run entry's per-set evaluation", flush=True)
    found = run(args)
    print(report(found), flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(found, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
