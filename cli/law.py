"""`sweep law fit RUNS.csv --target T`: the continued-pretraining loss law fitted to a table of runs, without training
anything, and its constrained optimum at a target with bootstrap intervals, or what it refuses and why.

The target's N is counted by sweep.scale from its shape; its tokens and LR schedule are the full run's defaults
(sweep.target.full_run: 1 T tokens, a 1 % warmup) and the proxy's decay (cosine to a tenth of the peak) unless
given: --schedule and --min-lr-ratio as a ladder's proxy has them give the target a ladder gives.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import get_args

from cli.args import fraction, positive_int_at_most, whole_number_at_most
from sweep.study.config import PickConfig
from sweep.target.families.registry import PRESETS
from sweep.target.full_run import MOST_TOKENS, PROXY_DECAY
from train_entry.optimizer import OptimizerConfig

DEFAULT_BUDGET = 0.01
"""The shipped specs' forgetting budget: the reference recipe's ~1 % general regression."""
SCHEDULES = get_args(OptimizerConfig.model_fields["schedule"].annotation)
MOST_REFITS = 10_000
"""ladder.law.refits' bound (sweep.law.config.LawSettings): 200 take about a minute on one core, so this is
nearly an hour; a typo of 100000 is refused at once."""


def add_parser(verbs) -> None:
    law = verbs.add_parser(
        "law",
        help="fit the continued-pretraining loss law to a table of runs and predict a target's optimum",
        description="The scale law of docs/ladder.md, fitted to runs you already have (nothing is trained).",
    )
    actions = law.add_subparsers(dest="action", required=True, metavar="fit")
    fit = actions.add_parser(
        "fit",
        help="fit the law to RUNS.csv and print it, the target's optimum with intervals, and what it refuses",
        description=(
            "Fits general and domain loss (relative to each run's base) as functions of N, tokens, domain share and "
            "peak LR to every row of RUNS.csv (docs/ladder.md, 'Runs as a CSV'), then maximises the predicted "
            "domain_gain with predicted forgetting within --budget at the target, over the lr_fraction and domain "
            "shares the runs cover, with 90 % intervals from bootstrap refits. An optimum outside the runs' ranges "
            "is answered with the direction to extend them, never a clipped number. Exit 2 for a bad file."
        ),
    )
    fit.add_argument("runs", type=Path, metavar="RUNS.csv", help="one row per evaluation of each run")
    _add_target_arguments(fit)
    fit.add_argument("--budget", type=fraction, default=DEFAULT_BUDGET, help="forgetting budget (default 0.01)")
    least = PickConfig.model_fields["min_probability"].default
    fit.add_argument(
        "--min-probability",
        type=probability,
        default=least,
        help=f"the pick's rule: the answer keeps P(forgetting <= budget) at least this (default {least:g}, as a "
        "spec's objective.pick.min_probability)",
    )
    fit.add_argument(
        "--refits",
        type=whole_number_at_most(MOST_REFITS),
        default=200,
        help=f"bootstrap refits, 0 to {MOST_REFITS:,} (default 200)",
    )
    fit.add_argument("--validate", action="store_true", help="also predict each rung from the others")
    fit.add_argument(
        "--output",
        type=Path,
        default=None,
        help="also write the report as JSON to this new file (checked before the fit: never a folder, a device or "
        "the runs file itself)",
    )
    fit.add_argument("--force", action="store_true", help="let --output replace an existing regular file")
    fit.set_defaults(func=run)


def _add_target_arguments(fit: argparse.ArgumentParser) -> None:
    """The target the law answers at, and the full run's tokens and schedule there."""
    counted = [name for name, target in PRESETS.items() if target.pretrain_tokens is not None]
    fit.add_argument(
        "--target",
        required=True,
        help=f"a preset whose pretraining tokens are published ({', '.join(counted)}), a target YAML file or a "
        "Hugging Face model directory (these with pretrain_tokens or --pretrain-tokens)",
    )
    fit.add_argument(
        "--pretrain-tokens",
        type=positive_int_at_most(MOST_TOKENS),
        default=None,
        help="tokens the target's base was pretrained on, in place of the target's own (as sweep promote takes them)",
    )
    fit.add_argument(
        "--tokens",
        type=positive_int_at_most(MOST_TOKENS),
        default=None,
        help="the full run's tokens, 1 to 1e15 (default 1e12)",
    )
    fit.add_argument(
        "--schedule",
        choices=SCHEDULES,
        default=PROXY_DECAY.schedule,
        help="the full run's decay after its warmup, as a plan gives it: the proxy's (a ladder's proxy.schedule; "
        f"default {PROXY_DECAY.schedule})",
    )
    fit.add_argument(
        "--min-lr-ratio",
        type=floor,
        default=PROXY_DECAY.min_lr_ratio,
        help=f"the floor it decays to, a fraction of the peak (a ladder's proxy.min_lr_ratio; default "
        f"{PROXY_DECAY.min_lr_ratio:g})",
    )
    fit.add_argument(
        "--lr-mean",
        type=fraction,
        default=None,
        help="the full run's mean LR as a fraction of its peak, in place of the schedule's (default: its 1 %% "
        "warmup, then --schedule to --min-lr-ratio)",
    )


def run(args: argparse.Namespace) -> int:
    from sweep.files.compat import LAW_FIT
    from sweep.files.outputs import check_output
    from sweep.files.records import write_model
    from sweep.law.config import LawSettings
    from sweep.law.lines import report_lines
    from sweep.law.runs import fit_runs
    from sweep.law.table import LawInputError
    from sweep.spec.spec import forgetting_budget_warning

    if (budget := forgetting_budget_warning(args.budget, key="--budget")) is not None:
        print(f"warning: {budget}", file=sys.stderr)
    if args.output is not None:
        check_output(args.output, inputs={args.runs: "the runs file"}, force=args.force)
    report = fit_runs(
        args.runs,
        target_scale(
            args.target,
            tokens=args.tokens,
            lr_mean=args.lr_mean,
            pretrain_tokens=args.pretrain_tokens,
            recipe=PROXY_DECAY.model_copy(update={"schedule": args.schedule, "min_lr_ratio": args.min_lr_ratio}),
        ),
        budget=args.budget,
        settings=LawSettings(refits=args.refits),
        pick=PickConfig(min_probability=args.min_probability),
        validate=args.validate,
        progress=_progress,
    )
    print("\n".join(report_lines(report)))
    if args.output is not None:
        try:
            write_model(args.output, report, LAW_FIT)
        except OSError as exc:
            _temporary(args.output).unlink(missing_ok=True)
            raise LawInputError(f"--output {args.output}: cannot write the report: {exc.strerror or exc}") from None
        print(f"report: {args.output}")
    return 0


def _temporary(path: Path) -> Path:
    """The name sweep.files.records.write_whole writes before it renames."""
    return path.with_name(f".{path.name}.tmp")


def _progress(line: str) -> None:
    """Where the fit stands, on stderr: the report alone goes to stdout."""
    print(line, file=sys.stderr, flush=True)


def floor(text: str) -> float:
    return _number(text, lambda value: 0.0 <= value <= 1.0, "a fraction of the peak LR in [0, 1]")


def probability(text: str) -> float:
    return _number(text, lambda value: 0.0 < value < 1.0, "a probability in (0, 1)")


def _number(text: str, accepts: Callable[[float], bool], what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not accepts(value):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def target_scale(
    name: str,
    *,
    tokens: int | None,
    lr_mean: float | None,
    pretrain_tokens: int | None = None,
    recipe: OptimizerConfig = PROXY_DECAY,
):
    """The target's N (sweep.scale) and pretraining tokens, the full run's tokens and its schedule's mean LR, made as
    a ladder and its plan make them (sweep.target.full_run.full_run_target): the full run's warmup, then `recipe`'s
    decay and floor (a ladder's proxy's)."""
    from sweep.target.full_run import FullRun, full_run_target
    from sweep.target.load import load_target

    run = FullRun() if tokens is None else FullRun(tokens=tokens)
    scale = full_run_target(load_target(name, pretrain_tokens=pretrain_tokens), run, recipe).scale
    return scale if lr_mean is None else scale.model_copy(update={"lr_mean": lr_mean})
