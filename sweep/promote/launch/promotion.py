"""A promotion request carried out: the plan and its files, then the submission or the rehearsal.

`make_promotion` plans the run's promoted point (calibrating the compute rate on a local GPU when asked)
and writes runs/<name>/promotion/<id>/; `submit` and `rehearse` launch that plan. What a person
reads is the caller's: these return what happened and send progress lines to `echo`. torch,
megatron-core and Ray load only here, so `sweep promote --help` answers at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sweep.address import security_warnings
from sweep.files.compat import FULL_RUN, PLAN
from sweep.files.records import write_model, write_whole
from sweep.files.rundir import PlanDir
from sweep.promote.errors import PromotionError
from sweep.promote.launch.rehearse import RehearsalConfig, RehearsalResult, rehearse
from sweep.promote.launch.rehearse import toy_trainer as rehearsal_trainer
from sweep.promote.launch.submit import Submitted, submit_plan
from sweep.promote.launch.watching import forced_overshoot, job_wandb, watch_config
from sweep.promote.plan.megatron_args import args_text, differing_flags, launch_script
from sweep.promote.plan.plan import Plan, differences, make_plan, plan_dir
from sweep.promote.plan.summary import summary_markdown
from sweep.promote.point.point import proxy_trial
from sweep.promote.request.request import PromotionRequest, Rehearsal, Submission
from train_entry.fullrun.config import JobConfig, MegatronTrainer

Echo = Callable[[str], None]


@dataclass(frozen=True)
class Promotion:
    plan: Plan
    directory: PlanDir


def make_promotion(request: PromotionRequest) -> Promotion:
    """The plan of the request's run, calibrated when asked, written under RUN/promotion/<id>/."""
    config = request.config
    if request.calibrate:
        from sweep.promote.plan.calibrate import calibrated

        config = calibrated(request.run, config)
    plan = make_plan(request.run, config, observed=request.observed, unconfirmed=request.unconfirmed)
    return Promotion(plan, write_plan(plan, request.run))


def write_plan(plan: Plan, run_dir: Path) -> PlanDir:
    """plan.json, full_run.json (its FullRunConfig), summary.md and the Megatron-LM arguments and launch script."""
    directory = plan_dir(run_dir, plan.id)
    arguments, script = args_text(plan), launch_script(plan)
    if directory.plan_json.exists():
        _refuse_another_plan(Plan.read(directory.plan_json), plan, directory, arguments=arguments, script=script)
    directory.path.mkdir(parents=True, exist_ok=True)
    write_model(directory.plan_json, plan, PLAN)
    write_model(directory.full_run_json, plan.run, FULL_RUN)
    write_whole(directory.summary_md, summary_markdown(plan))
    write_whole(directory.megatron_args, arguments)
    write_whole(directory.launch_script, script)
    directory.launch_script.chmod(0o755)
    return directory


SHOWN_DIFFERENCES = 6
"""Differences an error lists before it counts the rest."""


def _refuse_another_plan(existing: Plan, plan: Plan, directory: PlanDir, *, arguments: str, script: str) -> None:
    """PromotionError when what is written under this id is not what this plan would write: another plan.json (the
    id is a hash of it, so that takes a hand edit or another cpt-sweep's plan of the same format), or Megatron-LM
    arguments or a launch script that differ (edited by hand, or written by a cpt-sweep that rendered them
    otherwise). Overwriting either would silently change what a launched job was started from."""
    found = [f"plan.json's {path}" for path in differences(existing, plan)]
    if directory.megatron_args.is_file() and directory.megatron_args.read_text(encoding="utf-8") != arguments:
        changed = differing_flags(directory.megatron_args.read_text(encoding="utf-8"), arguments)
        found += [f"{directory.megatron_args.name} {change}" for change in changed or ["(its layout)"]]
    if directory.launch_script.is_file() and directory.launch_script.read_text(encoding="utf-8") != script:
        found.append(f"{directory.launch_script.name}")
    if found:
        shown = "; ".join(found[:SHOWN_DIFFERENCES]) + (
            f"; and {len(found) - SHOWN_DIFFERENCES} more" if len(found) > SHOWN_DIFFERENCES else ""
        )
        raise PromotionError(
            f"{directory.path} holds another plan under id {plan.id} (it differs in: {shown}); nothing was written: "
            "move that directory aside to plan this request"
        )


def submit(promotion: Promotion, submission: Submission, *, echo: Echo) -> Submitted:
    """The plan's full run as a Ray job, once per plan; PromotionError while it has placeholders."""
    plan = promotion.plan
    plan.require_real_inputs()
    address = submission.cluster()
    for warning in security_warnings(address):
        echo(f"warning: {warning}")
    run = plan.run
    storage = submission.storage or str(Path(run.checkpoint.save_dir) / "ray_train")
    wandb = job_wandb(plan)

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
            max_failures=submission.max_failures,
            storage_path=storage,
            trainer=MegatronTrainer(run=run.model_dump(mode="json")),
            watch=watch_config(plan, stop_on_forgetting=submission.stop_on_forgetting),
            wandb=wandb,
        )

    return submit_plan(
        plan_id=plan.id, plan=promotion.directory, job_for=job_for, address=address, force=submission.force
    )


def rehearse_plan(promotion: Promotion, run_dir: Path, rehearsal: Rehearsal, *, echo: Echo) -> RehearsalResult:
    """The plan's job path at toy scale on a local 2-node cluster, with the proxy's own model and data."""
    plan = promotion.plan
    # The point the plan promotes, which --observed may have made the best observed trial rather than the pick.
    trial = proxy_trial(run_dir, plan.sweep.promoted)
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
    config = RehearsalConfig(fault_drill=rehearsal.fault_drill)
    trainer = rehearsal_trainer(trial, weights, config, sides=[item.side for item in plan.validation])
    tokens = config.run_tokens(trainer.seq_len)
    watch = watch_config(
        plan,
        stop_on_forgetting=rehearsal.stop_on_forgetting,
        tokens_per_iteration=tokens // config.steps,
        run_tokens=tokens,
    )
    if rehearsal.overshoot_drill:
        watch = forced_overshoot(watch, tokens)
    return rehearse(
        plan_id=plan.id,
        plan_dir=promotion.directory,
        trainer=trainer,
        config=config,
        echo=echo,
        watch=watch,
        wandb=job_wandb(plan),
    )
