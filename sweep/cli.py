"""The `sweep` command: a handful of verbs over one spec file.

Heavy imports (torch, Ray) happen inside the verbs so that `sweep --help` answers at once.
Input errors (a bad spec, an unusable corpus) print one clear message and exit with code 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from train_entry.mix import MixRatio

EXIT_INPUT_ERROR = 2


def _lr_fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1] (a fraction of the base's max_lr), got {value}")
    return value


def _mix(text: str) -> MixRatio:
    try:
        return MixRatio.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _cmd_base(args: argparse.Namespace) -> int:
    from reports.tables import print_corpora, print_manifest
    from sweep.prepare import prepare
    from sweep.spec import load_spec

    prepared = prepare(load_spec(args.spec))
    print_corpora(prepared.corpus_stats)
    print_manifest(prepared.base_manifest())
    return 0


def _cmd_trial(args: argparse.Namespace) -> int:
    from sweep.trial import run_one

    return run_one(args.spec, lr_fraction=args.lr_fraction, mix=args.mix, output_dir=args.output)


def _cmd_run(args: argparse.Namespace) -> int:
    from sweep.driver import run_sweep

    return run_sweep(args.spec, name=args.name, address=args.address, allow_remote=args.allow_remote, fresh=args.fresh)


def _cmd_status(args: argparse.Namespace) -> int:
    from sweep.status import print_status

    return print_status(args.run)


def _cmd_report(args: argparse.Namespace) -> int:
    from reports.report import write_comparison_report, write_run_report

    if args.wandb:  # checked first: a sweep that logged nothing to W&B is refused before any writing
        from reports.wandb_dashboard import plan_view, publish

        view = plan_view(args.runs)
    if len(args.runs) == 1:
        index = write_run_report(args.runs[0], args.output)
    else:
        index = write_comparison_report(args.runs, args.output)
    print(f"report: {index}")
    if args.wandb:
        print("\n".join(publish(view)))
    return 0


def _cmd_promote(args: argparse.Namespace) -> int:
    from sweep.promote.dry_run import promote

    return promote(args)


def _cmd_jobs(args: argparse.Namespace) -> int:
    from sweep.promote.jobs import print_jobs, print_logs

    if args.words[:1] == ["logs"]:
        if len(args.words) != 2:
            args.jobs_parser.error(f"expected `sweep jobs logs ID`, got {' '.join(args.words)!r}")
        return print_logs(args.words[1], address=args.address, allow_remote=args.allow_remote)
    if len(args.words) > 1:
        args.jobs_parser.error(f"expected `sweep jobs [RUN]` or `sweep jobs logs ID`, got {' '.join(args.words)!r}")
    return print_jobs(Path(args.words[0]) if args.words else None, allow_remote=args.allow_remote)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sweep",
        description=(
            "Sweep peak LR (as a fraction of the base's own max_lr) and the general:domain mix on "
            "small proxy runs, and pick the best trade-off between domain gain and forgetting."
        ),
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    base = verbs.add_parser("base", help="build (or reuse) the spec's base and print its manifest")
    base.add_argument("spec", type=Path, help="sweep spec YAML, e.g. search_spaces/lr_mix.yaml")
    base.set_defaults(func=_cmd_base)

    trial = verbs.add_parser("trial", help="run one proxy trial and print its metrics")
    trial.add_argument("spec", type=Path, help="sweep spec YAML")
    trial.add_argument("--lr-fraction", type=_lr_fraction, required=True, help="peak LR / base max_lr, in (0, 1]")
    trial.add_argument("--mix", type=_mix, required=True, help='general:domain ratio, e.g. "1:1" or "4:1"')
    trial.add_argument(
        "--output", type=Path, default=None, help="trial directory (default: runs/trials/lr<F>_mix<G>-<D>)"
    )
    trial.set_defaults(func=_cmd_trial)

    run = verbs.add_parser("run", help="run (or resume) a sweep under Ray Tune and pick the optimum")
    run.add_argument("spec", type=Path, help="sweep spec YAML")
    run.add_argument(
        "--name",
        default=None,
        help="run directory name under runs/: letters, digits, '.', '_', '-' (default: the spec file's stem)",
    )
    run.add_argument(
        "--address",
        default=None,
        help="join an existing Ray cluster: auto, HOST:PORT or ray://HOST:PORT; this machine only unless "
        "--allow-remote (default: start Ray locally)",
    )
    run.add_argument(
        "--allow-remote",
        action="store_true",
        help="accept a cluster on another machine: the W&B key and Ray's token travel to it",
    )
    run.add_argument(
        "--fresh", action="store_true", help="start over: the old runs/<name>/ is moved to runs/.trash/<name>-<time>/"
    )
    run.set_defaults(func=_cmd_run)

    status = verbs.add_parser("status", help="print the trials table of a running or finished sweep")
    status.add_argument("run", type=Path, help="run directory, e.g. runs/lr_mix")
    status.set_defaults(func=_cmd_status)

    report = verbs.add_parser(
        "report",
        help="write the HTML report of a run (or one comparing several runs); works while a sweep runs",
        description=(
            "One RUN: RUN/report/index.html (self-contained), a PNG per plot and report.md. Several RUNs: one "
            "comparison page overlaying their fronts and optima, by default in runs/compare-<a>-vs-<b>/report/."
        ),
    )
    report.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="run directory, e.g. runs/lr_mix")
    report.add_argument("--output", type=Path, default=None, help="write the report into this folder instead")
    report.add_argument(
        "--wandb",
        action="store_true",
        help="also save a W&B workspace view of the runs (online), or write its definition into the first RUN "
        "with the commands that publish it (offline)",
    )
    report.set_defaults(func=_cmd_report)

    from sweep.promote.dry_run import add_arguments

    promote = verbs.add_parser(
        "promote",
        help="turn the sweep's optimum into the full run's plan (layout, LR, blend, steps, estimate)",
        description=(
            "Plans the full run of RUN's optimum on a target model and cluster: peak LR, schedule, Megatron blend "
            "weights, iterations, the fastest 3D layout that fits in GPU memory, and the run's cost; checks it "
            "with megatron-core's own configs. --dry-run writes RUN/promotion/<id>/plan.json, summary.md and "
            "the equivalent Megatron-LM pretrain_gpt.py arguments."
        ),
    )
    add_arguments(promote)
    promote.set_defaults(func=_cmd_promote)

    jobs = verbs.add_parser(
        "jobs",
        help="list submitted full-run jobs with their status, or follow one's log",
        usage="sweep jobs [RUN] [--allow-remote] | sweep jobs logs ID [--address ADDR] [--allow-remote]",
        description="`sweep jobs [RUN]` lists the jobs `sweep promote --submit` recorded under runs/ (or RUN) with "
        "their live status; `sweep jobs logs ID` follows a job's log until it ends (secrets masked). Only loopback "
        "clusters are contacted unless --allow-remote is given, whether their address is typed or recorded in a "
        "jobs.json: Ray's client sends the cluster token with every request.",
    )
    jobs.add_argument("words", nargs="*", metavar="RUN | logs ID", help="a run directory, or `logs` and a job id")
    jobs.add_argument("--address", help="the job's cluster (default: the address its jobs.json recorded)")
    jobs.add_argument(
        "--allow-remote",
        action="store_true",
        help="contact a non-loopback cluster: the --address given, or one a jobs.json recorded",
    )
    jobs.set_defaults(func=_cmd_jobs, jobs_parser=jobs)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from sweep.errors import INPUT_ERRORS

    try:
        return args.func(args)
    except INPUT_ERRORS as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT_ERROR


if __name__ == "__main__":
    sys.exit(main())
