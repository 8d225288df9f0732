"""`sweep promote RUN ... --submit --address ADDR` and `--rehearse`: the command-line glue that launches a plan.

add_arguments() declares the launch flags on the promote parser; check_arguments() refuses a bad
combination or address before any planning; launch() submits the written plan to the cluster
or rehearses it locally. Light at import, like the rest of the promote CLI.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sweep.address import parse_address, security_warnings
from sweep.promote.errors import PromotionError

if TYPE_CHECKING:
    from sweep.promote.plan import Plan

DEFAULT_MAX_FAILURES = 10
"""Worker-group restarts Ray Train allows: a month on 480 GPUs sees several node failures."""


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    launch = parser.add_argument_group("launch (after planning)")
    launch.add_argument("--submit", action="store_true", help="submit the plan as a Ray job to --address")
    launch.add_argument(
        "--address",
        help="the cluster's Jobs API (dashboard), e.g. http://127.0.0.1:8265; loopback only unless --allow-remote",
    )
    launch.add_argument(
        "--allow-remote",
        action="store_true",
        help="accept a non-loopback --address (use https or Ray token auth: RAY_AUTH_MODE=token)",
    )
    launch.add_argument("--force", action="store_true", help="submit a new attempt even if the plan's job exists")
    launch.add_argument(
        "--max-failures",
        type=_non_negative_int,
        default=DEFAULT_MAX_FAILURES,
        help=f"worker-group restarts after a lost worker or node (default {DEFAULT_MAX_FAILURES})",
    )
    launch.add_argument(
        "--storage",
        help="shared storage for Ray Train's run state, reached by every node (default: <save-dir>/ray_train)",
    )
    launch.add_argument(
        "--rehearse",
        action="store_true",
        help="run the job path at toy scale on a local simulated 2-node Ray cluster (CPU), with a fault drill",
    )
    launch.add_argument("--no-fault-drill", action="store_true", help="rehearse without killing a node")


def check_arguments(args: argparse.Namespace) -> None:
    """PromotionError for a launch request that cannot work, before anything is planned or written."""
    if args.submit and args.rehearse:
        raise PromotionError("--submit and --rehearse are separate steps: rehearse first, then submit")
    if (args.submit or args.rehearse) and args.dry_run:
        raise PromotionError("--dry-run plans only; drop it to --submit or --rehearse")
    if args.submit and not args.address:
        raise PromotionError("--submit needs --address, the cluster's Jobs API, e.g. http://127.0.0.1:8265")
    if args.address and not args.submit:
        raise PromotionError("--address is where --submit sends the plan; add --submit")
    if args.submit:
        parse_address(args.address, allow_remote=args.allow_remote)


def launch(plan: Plan, run_dir: Path, plan_dir: Path, args: argparse.Namespace) -> int:
    if args.rehearse:
        return _rehearse(plan, run_dir, plan_dir, fault_drill=not args.no_fault_drill)
    return _submit(plan, plan_dir, args)


def _submit(plan: Plan, plan_dir: Path, args: argparse.Namespace) -> int:
    from sweep.promote.submit import submit_plan
    from train_entry.fullrun.config import JobConfig, MegatronTrainer

    plan.require_real_inputs()
    address = parse_address(args.address, allow_remote=args.allow_remote)
    for warning in security_warnings(address):
        print(f"warning: {warning}", file=sys.stderr)
    run = plan.run
    storage = args.storage or str(Path(run.checkpoint.save_dir) / "ray_train")

    def job_for(submission_id: str) -> JobConfig:
        return JobConfig(
            name=submission_id,
            num_workers=plan.cluster.gpus,
            workers_per_node=plan.cluster.gpus_per_node,
            use_gpu=True,
            resources_per_worker={"GPU": 1},
            tensor_parallel=run.parallelism.tensor,
            steps=run.optimization.train_iters,
            checkpoint_interval=run.checkpoint.save_interval,
            max_failures=args.max_failures,
            storage_path=storage,
            trainer=MegatronTrainer(run=run.model_dump(mode="json")),
        )

    submitted = submit_plan(plan_id=plan.id, plan_dir=plan_dir, job_for=job_for, address=address, force=args.force)
    if submitted.new:
        print(f"submitted job {submitted.submission_id} to {address.url}: {submitted.status}")
    else:
        print(
            f"plan {plan.id} already has job {submitted.submission_id} on {address.url}: {submitted.status} "
            "(nothing submitted; --force submits a new attempt)"
        )
    print(f"follow it with: sweep jobs logs {submitted.submission_id}")
    return 0


def _rehearse(plan: Plan, run_dir: Path, plan_dir: Path, *, fault_drill: bool) -> int:
    from sweep.promote.plan import read_optimum
    from sweep.promote.rehearse import RehearsalConfig, rehearse, toy_trainer

    _, trial = read_optimum(run_dir)
    if not Path(trial.base_dir).is_dir():
        raise PromotionError(
            f"the proxy base {trial.base_dir} the sweep trained from is gone; rebuild it with `sweep base "
            f"{run_dir / 'spec.yaml'}` (the rehearsal trains it at toy scale)"
        )
    weights: dict[str, float] = {}
    for source in plan.run.data.blend:
        if source.name not in type(trial.train).model_fields:
            raise PromotionError(f"plan {plan.id}: blend source {source.prefix} has no side name, got {source.name=}")
        weights[source.name] = weights.get(source.name, 0.0) + source.weight
    config = RehearsalConfig(fault_drill=fault_drill)
    result = rehearse(plan_id=plan.id, plan_dir=plan_dir, trainer=toy_trainer(trial, weights, config), config=config)
    return 0 if result.status == "SUCCEEDED" and result.final_step == config.steps else 1
