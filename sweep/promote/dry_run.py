"""`sweep promote RUN --target T ... --dry-run`: the command-line glue around make_plan.

add_arguments() declares the flags, config_from_args() merges them over a --config file, and
promote() plans, writes runs/<name>/promotion/<id>/{plan.json, run.json, summary.md,
pretrain_gpt_args.txt, pretrain_gpt.sh} and prints the summary. Submission extends this module's parser and config.
Only light modules load at import: the command line's --help must not wait for torch or Ray.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweep.files import write_whole
from sweep.promote import launch
from sweep.promote.config import DataPrefix, PromotionConfig
from sweep.promote.errors import PromotionError
from sweep.spec import load_config

if TYPE_CHECKING:
    from sweep.promote.plan import Plan

ARGS_TXT = "pretrain_gpt_args.txt"
RUN_JSON = "run.json"
"""The plan's FullRunConfig alone: what `python -m train_entry.megatron --config` runs."""
LAUNCH_SH = "pretrain_gpt.sh"
SIDES = ("general", "non_english", "domain")


def _positive_int(text: str) -> int:
    try:
        value = int(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value <= 0 or value != float(text):
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _data_prefix(text: str) -> tuple[str, DataPrefix]:
    side, sep, rest = text.partition("=")
    if not sep or side not in SIDES or not rest:
        raise argparse.ArgumentTypeError(
            f"must be SIDE=PREFIX[@TOKENS] with SIDE one of {', '.join(SIDES)}, got {text!r}"
        )
    prefix, at, tokens = rest.rpartition("@") if "@" in rest else (rest, "", "")
    try:
        return side, DataPrefix(prefix=prefix, tokens=float(tokens) if at else None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"TOKENS must be a positive number, got {text!r}") from None


def _mfu(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1], got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", type=Path, help="a finished sweep's run directory, e.g. runs/lr_mix")
    parser.add_argument("--target", help="llama3.1-8b, llama3.1-70b, llama3.1-405b, or a target YAML file")
    parser.add_argument("--cluster", help="h100-480 (default) or a cluster YAML file")
    parser.add_argument("--tokens", type=_positive_int, help="training tokens of the full run (default 1e12)")
    parser.add_argument(
        "--global-batch-tokens", type=_positive_int, help="tokens per step (default 1440 x 8192 = 11796480)"
    )
    parser.add_argument(
        "--config", type=Path, help="a promotion YAML (the keys of sweep/promote/config.py); flags override it"
    )
    parser.add_argument(
        "--data-prefix",
        type=_data_prefix,
        action="append",
        default=[],
        metavar="SIDE=PREFIX[@TOKENS]",
        help="a Megatron indexed dataset for a side (general, non_english, domain); repeat for several; "
        "with @TOKENS on all of a side's prefixes its weight is split by them, else equally",
    )
    parser.add_argument("--tokenizer", help="the base's Hugging Face tokenizer directory on the cluster")
    parser.add_argument("--base-checkpoint", help="the base as a Megatron distributed checkpoint")
    parser.add_argument("--save-dir", help="the run's own checkpoint directory (also where a relaunch resumes)")
    layout = parser.add_argument_group("layout (fix any part; the search chooses the rest)")
    for flag, key in (
        ("--tensor-parallel", "tensor"),
        ("--pipeline-parallel", "pipeline"),
        ("--virtual-pipeline", "virtual_pipeline"),
        ("--context-parallel", "context"),
        ("--micro-batch-size", "micro_batch_size"),
    ):
        layout.add_argument(flag, dest=f"layout_{key}", type=_positive_int, metavar="N")
    layout.add_argument("--recompute", dest="layout_recompute", choices=("none", "selective", "full"))
    parser.add_argument("--mfu", type=_mfu, help="assumed model FLOPs utilisation (default 0.43, cited in the summary)")
    parser.add_argument(
        "--calibrate",
        action="store_true",
        help="time the target's layer on this machine's CUDA GPU with the entry's own code and plan with the "
        "measured rate instead of the assumed MFU",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="plan only: print it and write it under RUN/promotion/<id>/"
    )
    launch.add_arguments(parser)


def config_from_args(args: argparse.Namespace) -> PromotionConfig:
    """The --config file (if any) with the flags that were given laid over it."""
    config = load_config(args.config, PromotionConfig, kind="promotion config") if args.config else PromotionConfig()
    top: dict[str, Any] = {
        key: value
        for key, value in (
            ("target", args.target),
            ("cluster", args.cluster),
            ("tokens", args.tokens),
            ("global_batch_tokens", args.global_batch_tokens),
        )
        if value is not None
    }
    data: dict[str, Any] = {}
    for side in SIDES:
        given = [prefix for name, prefix in args.data_prefix if name == side]
        if given:  # a side's prefixes on the command line replace the file's
            data[side] = given
    if args.tokenizer:
        data["tokenizer"] = args.tokenizer
    checkpoint = {
        key: value for key, value in (("base_dir", args.base_checkpoint), ("save_dir", args.save_dir)) if value
    }
    layout = {
        key.removeprefix("layout_"): value
        for key, value in vars(args).items()
        if key.startswith("layout_") and value is not None
    }
    return config.model_copy(
        update={
            **top,
            "data": config.data.model_copy(update=data),
            "checkpoint": config.checkpoint.model_copy(update=checkpoint),
            "layout": config.layout.model_validate({**config.layout.model_dump(exclude_unset=True), **layout}),
            "assumptions": config.assumptions.model_copy(update={"mfu": args.mfu} if args.mfu else {}),
        }
    )


def write_plan(plan: Plan, run_dir: Path) -> Path:
    """plan.json, run.json (its FullRunConfig), summary.md and the Megatron-LM arguments under run_dir/promotion/<id>/."""
    from sweep.promote.megatron_args import args_text, launch_script
    from sweep.promote.plan import plan_dir
    from sweep.promote.summary import SUMMARY_MD, summary_markdown

    directory = plan_dir(run_dir, plan.id)
    plan.write(directory)
    write_whole(directory / RUN_JSON, plan.run.model_dump_json(indent=2) + "\n")
    write_whole(directory / SUMMARY_MD, summary_markdown(plan))
    write_whole(directory / ARGS_TXT, args_text(plan))
    script = directory / LAUNCH_SH
    write_whole(script, launch_script(plan))
    script.chmod(0o755)
    return directory


def promote(args: argparse.Namespace) -> int:
    launch.check_arguments(args)
    if not (args.dry_run or args.submit or args.rehearse):
        raise PromotionError(
            "nothing to do: add --dry-run to plan, --submit --address ADDR to submit, or --rehearse to rehearse locally"
        )
    # megatron-core, torch and Ray load here, so that `sweep promote --help` answers at once.
    from reports.console import make_console
    from sweep.promote.plan import make_plan
    from sweep.promote.summary import summary_tables

    config = config_from_args(args)
    if args.calibrate:
        if args.mfu:
            raise PromotionError("--calibrate measures the compute rate that --mfu states: give one of them")
        from sweep.promote.calibrate import calibrated

        config = calibrated(args.run, config)
    plan = make_plan(args.run, config)
    directory = write_plan(plan, args.run)
    console = make_console()
    console.print(summary_tables(plan))
    if plan.placeholders:
        console.print(
            f"[yellow]placeholders for: {', '.join(plan.placeholders)} - fine for a dry run; "
            "a submission needs the real paths[/yellow]"
        )
    console.print(f"plan {plan.id} written to {directory}")
    return 0 if args.dry_run else launch.launch(plan, args.run, directory, args)
