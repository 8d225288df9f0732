"""`python -m train_entry.megatron --config full_run.json`: one rank of a full run, as torchrun starts it.

    torchrun --nnodes 60 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29500 \\
        -m train_entry.megatron --config plan/full_run.json

A config that cannot run (bad JSON, a value out of range, a layout megatron-core rejects or this
node's layers cannot run, a missing base checkpoint or tokenizer, a tokenizer directory that names
code to run) exits with code 2 and one message, before any GPU work.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from pydantic import ValidationError

from train_entry.data.corpus import CorpusError
from train_entry.hf_dir import HfDirError, refuse_remote_code
from train_entry.megatron.checkpoints import CheckpointError, start_point
from train_entry.megatron.config import FullRunConfig, RunConfigError
from train_entry.megatron.core_configs import CoreConfigError, check_backend, core_configs, has_transformer_engine
from train_entry.megatron.train import train

INPUT_ERRORS = (CoreConfigError, RunConfigError, CheckpointError, CorpusError, HfDirError)
"""Errors that mean "fix the run config": reported without a traceback, exit code 2."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train_entry.megatron", description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="a FullRunConfig as JSON (a plan's run config)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        text = args.config.read_text()
    except OSError as error:
        print(f"error: --config {str(args.config)!r}: cannot read it ({error.strerror})", file=sys.stderr)
        return 2
    try:
        config = FullRunConfig.model_validate_json(text)
        # megatron-core's own checks and the start checkpoint, before the process group and the GPUs are touched.
        core_configs(config)
        check_backend(config, transformer_engine=has_transformer_engine())
        start_point(config.checkpoint)
        refuse_remote_code(Path(config.data.tokenizer))  # loaded later, after the process group is up
        result = train(config)
    except ValidationError as error:
        print(f"error: {args.config}: {error}", file=sys.stderr)
        return 2
    except INPUT_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if os.environ.get("RANK", "0") == "0":
        print(result.model_dump_json(indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
