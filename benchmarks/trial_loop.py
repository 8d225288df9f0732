"""Trial-loop throughput against a bare PyTorch training loop on the same model, batch and threads.

The trial loop is `train_entry.loop.fit` as a proxy trial runs it: batches drawn from the
megatron-core blended stream, the LR schedule set every step, AdamW with decay groups, gradient
clipping and the divergence check (which reads the loss every step). The bare loop is the
textbook forward / backward / step on pre-made tensors. Both are timed in one process, A B A B,
so the ratio holds when the machine's speed drifts; the order flips every round.

    .venv/bin/python benchmarks/trial_loop.py [--spec search_spaces/lr_mix.yaml] [--steps 40] [--rounds 6]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from sweep.run.prepare import prepare
from sweep.spec.spec import load_spec
from train_entry.data.blend import build_train_stream
from train_entry.data.tokenizer import megatron_tokenizer
from train_entry.loop import fit
from train_entry.mix import MixRatio
from train_entry.model import Runtime, load_causal_lm
from train_entry.optimizer import peak_lr
from train_entry.trial_config import ProxyConfig

PEAK_LR_FRACTION = 0.1
"""Both loops train at lr_fraction 0.1 of the base's max_lr."""


def trial_loop(prepared, recipe: ProxyConfig, runtime: Runtime, cache_dir: Path) -> float:
    stream = build_train_stream(
        prepared.train,
        MixRatio(1, 1),
        prepared.non_english_share,
        num_samples=recipe.steps * recipe.batch_size,
        seq_len=recipe.seq_len,
        seed=recipe.seed,
        tokenizer=megatron_tokenizer(prepared.tokenizer_dir),
        cache_dir=cache_dir,
    )
    model = load_causal_lm(prepared.base_dir, runtime)
    started = time.perf_counter()
    fit(
        model,
        stream,
        recipe,
        runtime,
        steps=recipe.steps,
        batch_size=recipe.batch_size,
        peak_lr=peak_lr(PEAK_LR_FRACTION, max_lr=prepared.spec.base.max_lr),
        eval_interval=recipe.steps,
        divergence_factor=recipe.divergence_factor,
        evaluate=lambda *_: False,
    )
    return recipe.steps * recipe.batch_size * recipe.seq_len / (time.perf_counter() - started)


def bare_loop(prepared, recipe: ProxyConfig, runtime: Runtime) -> float:
    model = load_causal_lm(prepared.base_dir, runtime)
    vocab = model.config.vocab_size
    batches = [torch.randint(0, vocab, (recipe.batch_size, recipe.seq_len + 1)) for _ in range(recipe.steps)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=peak_lr(PEAK_LR_FRACTION, max_lr=prepared.spec.base.max_lr))
    model.train()
    started = time.perf_counter()
    for batch in batches:
        logits = model(input_ids=batch[:, :-1]).logits
        loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return recipe.steps * recipe.batch_size * recipe.seq_len / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=Path("search_spaces/lr_mix.yaml"))
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/cpt-sweep-bench-index"))
    args = parser.parse_args()

    prepared = prepare(load_spec(args.spec))
    spec = prepared.spec
    torch.set_num_threads(spec.execution.cpus)
    runtime = Runtime.detect()
    # The spec's proxy, cut to --steps (a warmup that still fits).
    recipe = spec.proxy.model_copy(
        update={
            "steps": args.steps,
            "warmup_steps": min(spec.proxy.warmup_steps, args.steps - 1),
            "eval_interval": args.steps,
        }
    )
    trial, bare = [], []
    for round_ in range(args.rounds):
        # Alternate which loop goes first, so neither always runs on a warmer machine.
        if round_ % 2:
            bare.append(bare_loop(prepared, recipe, runtime))
        trial.append(trial_loop(prepared, recipe, runtime, args.cache_dir))
        if not round_ % 2:
            bare.append(bare_loop(prepared, recipe, runtime))
    ratios = [t / b for t, b in zip(trial, bare)]
    print(
        f"model {prepared.base_dir.name}, batch {spec.proxy.batch_size} x {spec.proxy.seq_len}, "
        f"{spec.execution.cpus} thread(s), {args.steps} steps x {args.rounds} rounds on {runtime.device}"
    )
    print(
        f"trial loop  tokens/s  median {statistics.median(trial):,.0f}  (min {min(trial):,.0f}, max {max(trial):,.0f})"
    )
    print(f"bare loop   tokens/s  median {statistics.median(bare):,.0f}  (min {min(bare):,.0f}, max {max(bare):,.0f})")
    print(
        f"ratio trial/bare      median {statistics.median(ratios):.3f}  (min {min(ratios):.3f}, max {max(ratios):.3f})"
    )


if __name__ == "__main__":
    main()
