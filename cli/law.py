"""`sweep law fit RUNS.csv --target T`: the continued-pretraining loss law fitted to a table of runs, without training
anything, and its constrained optimum at a target with bootstrap intervals, or what it refuses and why.

The target's N is counted by sweep.scale from its shape; its tokens and LR schedule are the full run's defaults
(sweep.promote.config: 1 T tokens, a 1 % warmup, cosine to a tenth of the peak) unless given.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cli.args import fraction, non_negative_int, positive_int

DEFAULT_BUDGET = 0.01
"""The shipped specs' forgetting budget: the reference recipe's ~1 % general regression."""
DEFAULT_MIN_PROBABILITY = 0.9
"""objective.pick.min_probability's default (sweep.choice.config.PickConfig), repeated here so that `--help` loads
no pydantic: the same rule for the law as for the pick."""


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
    fit.add_argument("--target", required=True, help="llama3.1-8b, llama3.1-70b, llama3.1-405b, or a target YAML file")
    fit.add_argument("--tokens", type=positive_int, default=None, help="the full run's tokens (default 1e12)")
    fit.add_argument(
        "--lr-mean",
        type=fraction,
        default=None,
        help="the full run's mean LR as a fraction of its peak (default: 1 %% warmup, cosine to 0.1 of the peak)",
    )
    fit.add_argument("--budget", type=fraction, default=DEFAULT_BUDGET, help="forgetting budget (default 0.01)")
    fit.add_argument(
        "--min-probability",
        type=probability,
        default=DEFAULT_MIN_PROBABILITY,
        help="the pick's rule: the answer keeps P(forgetting <= budget) at least this (default 0.9, as a spec's "
        "objective.pick.min_probability)",
    )
    fit.add_argument("--refits", type=non_negative_int, default=200, help="bootstrap refits (default 200)")
    fit.add_argument("--validate", action="store_true", help="also predict each rung from the others")
    fit.add_argument("--output", type=Path, default=None, help="also write the report as JSON to this file")
    fit.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sweep.choice.config import PickConfig
    from sweep.files.compat import LAW_FIT
    from sweep.files.records import write_model
    from sweep.ladder.config import LawSettings
    from sweep.ladder.law_lines import report_lines
    from sweep.ladder.law_runs import fit_runs

    report = fit_runs(
        args.runs,
        target_scale(args.target, tokens=args.tokens, lr_mean=args.lr_mean),
        budget=args.budget,
        settings=LawSettings(refits=args.refits),
        pick=PickConfig(min_probability=args.min_probability),
        validate=args.validate,
        progress=_progress,
    )
    print("\n".join(report_lines(report)))
    if args.output is not None:
        write_model(args.output, report, LAW_FIT)
        print(f"report: {args.output}")
    return 0


def _progress(line: str) -> None:
    """Where the fit stands, on stderr: the report alone goes to stdout."""
    print(line, file=sys.stderr, flush=True)


def probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be a probability in (0, 1), got {text!r}")
    return value


def target_scale(name: str, *, tokens: int | None, lr_mean: float | None):
    """The target's N (sweep.scale) and pretraining tokens, the full run's tokens and its schedule's mean LR (the
    promotion defaults: a 1 % warmup, then cosine to a tenth of the peak)."""
    from sweep.promote.config import PromotionConfig
    from sweep.promote.ladder import ladder_target
    from sweep.promote.targets import load_target
    from train_entry.optimizer import OptimizerConfig

    config = PromotionConfig() if tokens is None else PromotionConfig(tokens=tokens)
    scale = ladder_target(load_target(name), config, OptimizerConfig(warmup_steps=0, schedule="cosine")).scale
    return scale if lr_mean is None else scale.model_copy(update={"lr_mean": lr_mean})
