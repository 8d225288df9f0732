"""This machine's speed now: two fixed CPU workloads to read beside a suite or set-up time.

This 2-core machine has run 1.4-4x slower for hours at a time with nothing else running (BENCHMARKS.md, set-up and
suite times), and its /proc/stat shows no steal time to say so: a suite time alone says as much about the machine as
about the code. The two workloads are what the suite's CPU goes to:

- start: a fresh Python process importing what each trial process and Ray Train worker imports (torch, transformers'
  Llama, megatron-core's datasets);
- steps: 200 training steps, AdamW, on one thread, of a model the size of the tests' tiny base (tests/conftest.py:
  2 layers, hidden 64, batch 8 x 64 tokens), fixed here so that readings stay comparable when that base changes.

Each is run --rounds times; the median is printed. Run it just before and just after the timed command: a suite time
is comparable with another only when the readings beside them are.

    .venv/bin/python benchmarks/machine_speed.py [--rounds 3]

prints one line: `machine speed: start S s, steps T s (median of R; min-max ...)`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

START = (
    "import torch, transformers.models.llama.modeling_llama, megatron.core.datasets.blended_megatron_dataset_builder"
)
STEPS = """
import time, torch
from transformers import LlamaConfig, LlamaForCausalLM
torch.set_num_threads(1)
torch.manual_seed(0)
config = LlamaConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                     intermediate_size=176, max_position_embeddings=64)
model = LlamaForCausalLM(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
tokens = torch.randint(0, 512, (8, 64))
start = time.perf_counter()
for _ in range(200):
    loss = model(input_ids=tokens, labels=tokens).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
print(time.perf_counter() - start)
"""
"""Times its own loop: the imports before it are the start workload's."""


def start_s() -> float:
    """Wall seconds of a fresh process's imports."""
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", START], check=True, capture_output=True)  # megatron-core's warnings
    return time.perf_counter() - began


def steps_s() -> float:
    """Wall seconds of the training steps alone."""
    done = subprocess.run([sys.executable, "-c", STEPS], check=True, capture_output=True, text=True)
    return float(done.stdout.split()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each workload (default 3)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: give 1 or more")  # exit 2
    starts, steps = [], []
    for _ in range(args.rounds):  # interleaved: a change in the machine's speed shows in both
        starts.append(start_s())
        steps.append(steps_s())
    print(
        f"machine speed: start {statistics.median(starts):.2f} s, steps {statistics.median(steps):.2f} s "
        f"(median of {args.rounds}; start {min(starts):.2f}-{max(starts):.2f}, "
        f"steps {min(steps):.2f}-{max(steps):.2f})",
        flush=True,
    )


if __name__ == "__main__":
    main()
