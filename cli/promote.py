"""`sweep promote plan | submit | rehearse RUN`: the sweep's pick as the full run's plan, then its launch.

The flags become one typed PromotionRequest (sweep.promote.request.request), built here once and carried
out by sweep.promote.launch.promotion.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cli.args import fraction, non_negative_int, positive_int, positive_int_at_most
from sweep.promote.estimate.clusters import DEFAULT_CLUSTER
from sweep.promote.estimate.clusters import PRESETS as CLUSTERS
from sweep.target.load import TARGET_FORMS
from train_entry.config import shown

SIDES = ("general", "non_english", "domain")


def add_parser(verbs) -> None:
    promote = verbs.add_parser(
        "promote",
        help="turn the sweep's pick into the full run's plan, then submit or rehearse it",
        description=(
            "plan: the full run of RUN's pick (best.json's: the surrogate's point, else the best observed trial's; "
            "--observed takes the best observed trial; of a ladder, its loss law's optimum at the target, refused "
            "when the law gives none) on a target model and cluster (peak LR, schedule, Megatron blend "
            "weights, iterations, the fastest 3D layout that fits in GPU memory, the run's cost), checked with "
            "megatron-core's own configs and written to RUN/promotion/<id>/. submit: plan, then submit it as a Ray "
            "job (once per plan). rehearse: plan, then run the job path at toy scale on a local 2-node Ray cluster."
        ),
    )
    modes = promote.add_subparsers(dest="mode", required=True, metavar="plan | submit | rehearse | watch")
    plan, submit, rehearse = _add_plan_modes(modes)
    for parser in (plan, submit, rehearse):
        _add_plan_arguments(parser)
        parser.set_defaults(func=run)
    _add_watch_parser(modes)
    submit.add_argument(
        "--address",
        required=True,
        help="the cluster's Jobs API (dashboard), e.g. http://127.0.0.1:8265; loopback only unless --allow-remote",
    )
    submit.add_argument(
        "--allow-remote",
        action="store_true",
        help="accept a non-loopback --address (use https or Ray token auth: RAY_AUTH_MODE=token)",
    )
    submit.add_argument("--force", action="store_true", help="submit a new attempt even if the plan's job exists")
    submit.add_argument(
        "--max-failures", type=non_negative_int, default=None, help="worker-group restarts after a lost worker or node"
    )
    submit.add_argument(
        "--storage",
        help="shared storage for Ray Train's run state, reached by every node (default: <save-dir>/ray_train)",
    )
    rehearse.add_argument("--no-fault-drill", action="store_true", help="rehearse without killing a node")
    rehearse.add_argument(
        "--overshoot-drill",
        action="store_true",
        help="hold the run to a forgetting bound every evaluation exceeds, so the watch trips at its second "
        "evaluation (a drill of the warning, the W&B alert and, with --stop-on-forgetting, the stop)",
    )
    for mode in (submit, rehearse):
        mode.add_argument(
            "--stop-on-forgetting",
            action="store_true",
            help="checkpoint and stop the job when measured forgetting exceeds the plan's predicted upper bound at "
            "2 evaluations in a row (without it: a warning line and a W&B alert)",
        )


def _add_plan_modes(modes: argparse._SubParsersAction) -> tuple[argparse.ArgumentParser, ...]:
    """plan, submit and rehearse, each usage line showing the target as the required argument it is."""
    target = "--target {PRESET | TARGET.yaml | MODEL_DIR}"
    helps = {
        "plan": ("plan only: print it and write it under RUN/promotion/<id>/", ""),
        "submit": ("plan, then submit the full run as a Ray job to --address", " --address URL"),
        "rehearse": ("plan, then rehearse the job path locally with a fault drill", ""),
    }
    return tuple(
        modes.add_parser(mode, help=text, usage=f"%(prog)s RUN {target}{more} [options]")
        for mode, (text, more) in helps.items()
    )


def _add_watch_parser(modes: argparse._SubParsersAction) -> None:
    watch = modes.add_parser(
        "watch", help="a submitted or rehearsed job's forgetting, measured against the plan's prediction"
    )
    watch.add_argument("run", type=Path, help="the sweep's run directory the plan was promoted from")
    source = watch.add_mutually_exclusive_group()
    source.add_argument("--job", help="the job's submission id (default: the latest submitted or rehearsed job)")
    source.add_argument(
        "--log",
        type=Path,
        action="append",
        metavar="FILE",
        help="a Megatron-LM stdout log of the plan's own launch (pretrain_gpt.sh) in place of a job's; repeat it to "
        "read several in order (the --skip-train launch's base evaluation first)",
    )
    watch.add_argument("--plan", help="the plan a --log ran (default: the run's only plan)")
    watch.add_argument(
        "--allow-remote", action="store_true", help="read a submitted job's log from a non-loopback cluster"
    )
    watch.set_defaults(func=run_watch)


def _add_target_arguments(parser: argparse.ArgumentParser) -> None:
    """The target (required, here or in --config) and the two numbers of its base a config.json (or an unpublishing
    maker) does not give."""
    parser.add_argument_group("required (or target: in the --config file)").add_argument(
        "--target", metavar="TARGET", type=_named("target"), help=f"the model the full run trains: {TARGET_FORMS}"
    )
    parser.add_argument(
        "--max-lr",
        type=fraction,
        help="the base's own pretraining peak LR, in place of the target's; needed for a model directory and for "
        "the presets whose makers do not publish it (Qwen, Mistral)",
    )
    parser.add_argument(
        "--pretrain-tokens",
        type=positive_int,
        help="tokens the base was pretrained on, in place of the target's; a ladder's promotion needs them",
    )


def _add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """The cluster, named from its registry, and whether its image has Transformer Engine."""
    parser.add_argument(
        "--cluster",
        type=_named("cluster"),
        help=f"a preset ({', '.join(CLUSTERS)}; default {DEFAULT_CLUSTER}) or a cluster YAML file",
    )
    parser.add_argument(
        "--transformer-engine",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="whether the cluster's image has Transformer Engine (default: the cluster's transformer_engine key, "
        f"{str(CLUSTERS[DEFAULT_CLUSTER].transformer_engine).lower()} for {DEFAULT_CLUSTER}); without it the layout "
        "search leaves out sequence and context parallelism",
    )


def _add_layout_arguments(parser: argparse.ArgumentParser) -> None:
    layout = parser.add_argument_group("layout (fix any part; the search chooses the rest)")
    for flag, key in (
        ("--tensor-parallel", "tensor"),
        ("--pipeline-parallel", "pipeline"),
        ("--virtual-pipeline", "virtual_pipeline"),
        ("--context-parallel", "context"),
        ("--expert-parallel", "expert"),
        ("--micro-batch-size", "micro_batch_size"),
    ):
        layout.add_argument(flag, dest=f"layout_{key}", type=positive_int, metavar="N")
    layout.add_argument("--recompute", dest="layout_recompute", choices=("none", "selective", "full"))


def _add_plan_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", type=Path, help="a finished sweep's run directory, e.g. runs/lr_mix")
    _add_target_arguments(parser)
    parser.add_argument(
        "--observed",
        action="store_true",
        help="promote the best observed trial (the best feasible completed trial) instead of best.json's pick, "
        "the surrogate's point; of a ladder, its largest rung's own pick instead of the law's optimum",
    )
    parser.add_argument(
        "--unconfirmed",
        action="store_true",
        help="promote best.json's pick even though its confirmation trials at fresh seeds did not hold it within "
        "the forgetting budget (or did not run); without it such a pick is refused",
    )
    _add_cluster_arguments(parser)
    parser.add_argument("--tokens", type=_tokens, help="training tokens of the full run (default 1e12)")
    parser.add_argument("--global-batch-tokens", type=_batch_tokens, help="tokens per step (default 1440 x 8192)")
    parser.add_argument(
        "--config", type=Path, help="a promotion YAML (the keys of sweep/promote/request/config.py); flags override it"
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
    parser.add_argument(
        "--valid-prefix",
        type=_valid_prefix,
        action="append",
        default=[],
        metavar="SIDE=PREFIX",
        help="held-out text of a side (general, non_english, domain) as one Megatron indexed dataset, evaluated "
        "apart for domain_gain and forgetting; default: the sweep's own validation prefix of that side",
    )
    parser.add_argument("--tokenizer", help="the base's Hugging Face tokenizer directory on the cluster")
    parser.add_argument("--base-checkpoint", help="the base as a Megatron distributed checkpoint")
    parser.add_argument("--save-dir", help="the run's own checkpoint directory (also where a relaunch resumes)")
    _add_layout_arguments(parser)
    compute = parser.add_mutually_exclusive_group()
    compute.add_argument("--mfu", type=fraction, help="assumed model FLOPs utilisation (default 0.43, cited)")
    compute.add_argument(
        "--calibrate",
        action="store_true",
        help="time the target's layer on this machine's CUDA GPU with the entry's own code and plan with the "
        "measured rate instead of the assumed MFU",
    )


def _named(kind: str) -> Callable[[str], str]:
    """A preset's name or a path, refused at once when it can be neither (a 100,000-character name was an OSError)."""

    def parse(text: str) -> str:
        from sweep.target.errors import TargetError
        from sweep.target.presets import check_value

        try:
            return check_value(text, kind=kind)
        except TargetError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def _tokens(text: str) -> int:
    from sweep.target.full_run import MOST_TOKENS  # here: it loads the target's models, which `sweep --help` skips

    return positive_int_at_most(MOST_TOKENS)(text)


def _batch_tokens(text: str) -> int:
    from sweep.target.full_run import MOST_BATCH_TOKENS

    return positive_int_at_most(MOST_BATCH_TOKENS)(text)


def _data_prefix(text: str):
    from sweep.promote.request.config import DataPrefix

    side, sep, rest = text.partition("=")
    if not sep or side not in SIDES or not rest:
        raise argparse.ArgumentTypeError(
            f"must be SIDE=PREFIX[@TOKENS] with SIDE one of {', '.join(SIDES)}, got {text!r}"
        )
    prefix, at, tokens = rest.rpartition("@") if "@" in rest else (rest, "", "")
    try:
        return side, DataPrefix(prefix=prefix, tokens=float(tokens) if at else None)
    except ValueError:
        from sweep.target.full_run import MOST_TOKENS

        raise argparse.ArgumentTypeError(
            f"TOKENS must be a positive number of at most {MOST_TOKENS:.0e}, got {shown(text)}"
        ) from None


def _valid_prefix(text: str) -> tuple[str, str]:
    side, sep, prefix = text.partition("=")
    if not sep or side not in SIDES or not prefix:
        raise argparse.ArgumentTypeError(f"must be SIDE=PREFIX with SIDE one of {', '.join(SIDES)}, got {text!r}")
    return side, prefix


def run(args: argparse.Namespace) -> int:
    request = build_request(args)  # a missing target or a bad flag is said before torch and megatron-core load

    from reports.console import make_console
    from sweep.promote.launch.promotion import make_promotion
    from sweep.promote.plan.summary import summary_tables

    promotion = make_promotion(request)
    plan = promotion.plan
    console = make_console()
    console.print(summary_tables(plan))
    if plan.placeholders:
        console.print(
            f"[yellow]placeholders for: {', '.join(plan.placeholders)} - fine for a plan; "
            "a submission needs the real paths[/yellow]"
        )
    console.print(f"plan {plan.id} written to {promotion.directory.path}")
    if args.mode == "submit":
        return _submit(promotion, request.launch)
    if args.mode == "rehearse":
        return _rehearse(promotion, request)
    return 0


def build_request(args: argparse.Namespace):
    """The command line as a PromotionRequest; PromotionError (or AddressError) naming what to fix."""
    from sweep.promote.errors import PromotionError
    from sweep.promote.request.request import PromotionRequest, Rehearsal, Submission

    try:
        launch: Submission | Rehearsal | None = None
        if args.mode == "submit":
            optional = {"storage": args.storage, "max_failures": args.max_failures}
            launch = Submission(
                address=args.address,
                allow_remote=args.allow_remote,
                force=args.force,
                stop_on_forgetting=args.stop_on_forgetting,
                **{key: value for key, value in optional.items() if value is not None},
            )
        elif args.mode == "rehearse":
            launch = Rehearsal(
                fault_drill=not args.no_fault_drill,
                stop_on_forgetting=args.stop_on_forgetting,
                overshoot_drill=args.overshoot_drill,
            )
        config = config_from_args(args)
        config.require_target()
        return PromotionRequest(
            run=args.run,
            config=config,
            observed=args.observed,
            unconfirmed=args.unconfirmed,
            calibrate=args.calibrate,
            launch=launch,
        )
    except ValidationError as error:
        raise PromotionError(error.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")) from None


def config_from_args(args: argparse.Namespace):
    """The --config file (if any) with the flags that were given laid over it."""
    from sweep.files.config_file import load_config
    from sweep.promote.request.config import PromotionConfig

    config = load_config(args.config, PromotionConfig, kind="promotion config") if args.config else PromotionConfig()
    top = {
        key: value
        for key, value in (
            ("target", args.target),
            ("max_lr", args.max_lr),
            ("pretrain_tokens", args.pretrain_tokens),
            ("cluster", args.cluster),
            ("transformer_engine", args.transformer_engine),
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
    if args.valid_prefix:
        data["valid"] = config.data.valid.model_copy(update=dict(args.valid_prefix))
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


def run_watch(args: argparse.Namespace) -> int:
    from sweep.promote.errors import PromotionError
    from sweep.promote.launch.watch_report import keep_record, watch_table, watched_job, watched_log

    if args.plan is not None and not args.log:
        raise PromotionError("--plan names the plan a --log ran; a job's own job.json says what it was held to")
    if args.log:
        watched = watched_log(args.run, args.log, plan_id=args.plan)
    else:
        watched = watched_job(args.run, job_id=args.job, allow_remote=args.allow_remote)
    print(watch_table(watched))
    print(f"kept in {keep_record(watched)} for the sweep's report (`sweep report {args.run}`)")
    return 0


def _submit(promotion, submission) -> int:
    from sweep.promote.launch.promotion import submit

    submitted = submit(promotion, submission, echo=lambda line: print(line, file=sys.stderr))
    url, plan_id = submission.cluster().url, promotion.plan.id
    if submitted.new:
        print(f"submitted job {submitted.submission_id} to {url}: {submitted.status}")
    else:
        print(
            f"plan {plan_id} already has job {submitted.submission_id} on {url}: {submitted.status} "
            "(nothing submitted; --force submits a new attempt)"
        )
    print(f"follow it with: sweep jobs logs {submitted.submission_id}")
    return 0


def _rehearse(promotion, request) -> int:
    from sweep.promote.launch.promotion import rehearse_plan
    from sweep.promote.launch.rehearse import RehearsalConfig

    result = rehearse_plan(promotion, request.run, request.launch, echo=print)
    if request.launch.stop_on_forgetting and result.stopped_by_watch is not None:
        # Stopped as asked: after its checkpoint, with the reason in Ray's status.
        return 0 if result.status == "FAILED" and result.stopped_by_watch in result.status_message else 1
    return 0 if result.status == "SUCCEEDED" and result.final_step == RehearsalConfig().steps else 1
