"""A plan id is a function of everything that changes what runs: two requests that give the same id write the same
Megatron-LM arguments, launch script and job, and each flag of `sweep promote plan` and each W&B setting of the sweep's
spec that changes any of them gives another id.

Seen by a user before the id covered the whole plan: `--mfu 0.5` rewrote a plan under its id with another
--save-interval and --eval-interval, `--mfu 0.3` on 70B another virtual pipeline, and another W&B project in the spec
another --wandb-project, each exit 0.
"""

from __future__ import annotations

import re

import pytest

from cli import build_parser, main
from cli.promote import build_request
from sweep.files.rundir import RunDir
from sweep.promote.launch.promotion import write_plan
from sweep.promote.launch.watching import job_wandb, watch_config
from sweep.promote.plan.calibrate import layer_flops_per_token, measured_assumptions
from sweep.promote.plan.megatron_args import args_text, launch_script
from sweep.promote.plan.plan import Plan, make_plan
from sweep.run.tracking import TrackingConfig, WandbConfig
from sweep.spec.spec import load_spec
from tests.conftest import REPO
from tests.sweep.promote.promote_runs import write_run
from train_entry.megatron.throughput import LayerTiming

CLUSTERS = REPO / "search_spaces" / "clusters"
BASE = ["--target", "llama3.1-70b"]
VARIATIONS: dict[str, list[str]] = {
    # Each flag of `sweep promote plan` and a value other than the base request's; a later --target wins.
    "--target": ["--target", "llama3.1-8b"],
    "--max-lr": ["--max-lr", "1e-4"],
    "--pretrain-tokens": ["--pretrain-tokens", "10000000000000"],
    "--observed": ["--observed"],
    "--unconfirmed": ["--unconfirmed"],
    "--cluster": ["--cluster", str(CLUSTERS / "h100-256.yaml")],
    "--transformer-engine": ["--no-transformer-engine"],
    "--tokens": ["--tokens", "500000000000"],
    "--global-batch-tokens": ["--global-batch-tokens", str(2 * 1440 * 8192)],
    "--config": ["--config", str(REPO / "search_spaces" / "promotion" / "lr_mix_70b.yaml")],
    "--data-prefix": ["--data-prefix", "domain=/lustre/listings_text_document@3e11"],
    "--valid-prefix": ["--valid-prefix", "domain=/lustre/valid/listings_text_document"],
    "--tokenizer": ["--tokenizer", "/lustre/models/Llama-3.1-70B"],
    "--base-checkpoint": ["--base-checkpoint", "/lustre/models/Llama-3.1-70B-mcore"],
    "--save-dir": ["--save-dir", "/lustre/runs/cpt"],
    "--tensor-parallel": ["--tensor-parallel", "8"],
    "--pipeline-parallel": ["--pipeline-parallel", "4"],
    "--virtual-pipeline": ["--pipeline-parallel", "4", "--virtual-pipeline", "2"],
    "--context-parallel": ["--context-parallel", "2"],
    "--expert-parallel": ["--target", "mixtral-8x7b", "--max-lr", "3e-4", "--expert-parallel", "2"],
    "--micro-batch-size": ["--micro-batch-size", "2"],
    "--recompute": ["--recompute", "full"],
    "--mfu": ["--mfu", "0.3"],
    "--mfu 0.5": ["--mfu", "0.5"],
}
NOT_VARIED = {"--help", "--calibrate"}
"""--calibrate measures on a CUDA GPU; its measured assumptions are varied below as a promotion config's."""
WANDB = {
    "project": WandbConfig(mode="offline", project="cpt-ecommerce"),
    "another project": WandbConfig(mode="offline", project="cpt-ecommerce-2"),
    "an entity": WandbConfig(mode="offline", project="cpt-ecommerce", entity="team"),
    "online": WandbConfig(mode="online", project="cpt-ecommerce"),
}


def _what_runs(plan: Plan) -> dict[str, object]:
    """What a plan launches: the Megatron-LM arguments and script, and what a submission's job.json takes from it."""
    return {
        "pretrain_gpt_args.txt": args_text(plan),
        "pretrain_gpt.sh": launch_script(plan),
        "job run": plan.run.model_dump(mode="json"),
        "job workers": (plan.cluster.gpus, plan.cluster.gpus_per_node),
        "job watch": watch_config(plan, stop_on_forgetting=False).model_dump(mode="json"),
        "job W&B": None if (wandb := job_wandb(plan, environ={})) is None else wandb.model_dump(mode="json"),
    }


def _plan(run_dir, argv: list[str]) -> Plan:
    """The plan `sweep promote plan RUN *argv` makes, through the command line's own parser and request."""
    request = build_request(build_parser().parse_args(["promote", "plan", str(run_dir), *argv]))
    return make_plan(request.run, request.config, observed=request.observed, unconfirmed=request.unconfirmed)


def _same_id_same_run(plans: dict[str, Plan]) -> None:
    """Plans that share an id launch the same thing, and each is written beside the others without an exit 2."""
    by_id: dict[str, tuple[str, dict[str, object]]] = {}
    for name, plan in plans.items():
        launched = _what_runs(plan)
        first = by_id.setdefault(plan.id, (name, launched))
        assert first[1] == launched, f"{name} and {first[0]} share id {plan.id} but launch different things"


def test_each_flag_that_changes_what_runs_changes_the_plan_id(tmp_path, capsys):
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    with pytest.raises(SystemExit):
        main(["promote", "plan", "--help"])
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", capsys.readouterr().out)) - {"--no-transformer-engine"}
    assert flags - NOT_VARIED <= {flag.split()[0] for flag in VARIATIONS}, "a flag of sweep promote plan is not varied"

    plans = {"base": _plan(run_dir, BASE)} | {name: _plan(run_dir, BASE + argv) for name, argv in VARIATIONS.items()}
    _same_id_same_run(plans)
    base = _what_runs(plans["base"])
    changed = {name for name, plan in plans.items() if _what_runs(plan) != base}
    # The cases: an assumed MFU moves the step time, so the checkpoint and evaluation intervals.
    assert {"--mfu", "--mfu 0.5", "--tensor-parallel", "--tokenizer", "--target"} <= changed
    assert all(plans[name].id != plans["base"].id for name in changed)
    for plan in plans.values():  # each beside the others, none refused, none written over another
        write_plan(plan, run_dir)
    for plan in plans.values():
        assert args_text(Plan.read(RunDir(run_dir).plan(plan.id).plan_json)) == args_text(plan)


def test_a_calibrated_rate_is_another_plan(finished_run):
    """--calibrate replaces the assumed MFU with a measured one (measured_assumptions, as on a GPU): another plan."""
    run_dir = finished_run()
    assumed = _plan(run_dir, BASE)
    par, model = assumed.chosen.parallelism, assumed.target.model
    flops = layer_flops_per_token(model, par.recompute) * par.micro_batch_size * model.seq_length
    timing = LayerTiming(seconds_per_layer=flops / 300e12, card="NVIDIA H200", attention="torch sdpa")
    config = build_request(build_parser().parse_args(["promote", "plan", str(run_dir), *BASE])).config
    calibrated = make_plan(run_dir, config.model_copy(update={"assumptions": measured_assumptions(assumed, timing)}))
    assert calibrated.id != assumed.id and args_text(calibrated) != args_text(assumed)
    _same_id_same_run({"assumed": assumed, "calibrated": calibrated})


def test_each_wandb_setting_of_the_sweep_that_changes_what_runs_changes_the_plan_id(tmp_path, tiny_spec_path):
    """The spec copy the sweep ran, rewritten between plans of one request: another project, entity or mode is
    another plan, each written beside the others."""
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    spec = load_spec(tiny_spec_path)
    plans = {}
    for name, wandb in WANDB.items():
        RunDir(run_dir).write_spec_copy(spec.model_copy(update={"tracking": TrackingConfig(wandb=wandb)}))
        plans[name] = _plan(run_dir, BASE)
        write_plan(plans[name], run_dir)
    _same_id_same_run(plans)
    assert len({plan.id for plan in plans.values()}) == len(WANDB)
    flags = {name: args_text(plan) for name, plan in plans.items()}
    assert "--wandb-project cpt-ecommerce-2\n" in flags["another project"]
    assert "--wandb-project cpt-ecommerce\n" in flags["project"]
