"""The full run logs to the sweep's W&B project: the plan carries the sweep's tracking (never the API key), and the
Megatron-LM arguments and launch script carry the matching flags and mode."""

from __future__ import annotations

import pytest

from sweep.files.rundir import RunDir
from sweep.promote.launch.promotion import write_plan
from sweep.promote.plan.megatron_args import megatron_args
from sweep.promote.plan.plan import make_plan
from sweep.promote.request.config import PromotionCheckpoint, PromotionConfig
from sweep.run.tracking import TrackingConfig, WandbConfig
from sweep.spec.spec import load_spec
from tests.sweep.promote.plan import megatron_lm
from tests.sweep.promote.promote_runs import write_run

SECRET = "wandb-key-that-must-not-leak-0123456789"
CONFIG = PromotionConfig(target="llama3.1-8b", checkpoint=PromotionCheckpoint(save_dir="/lustre/runs/cpt"))


def _tracked_run(tmp_path, tiny_spec_path, wandb: WandbConfig | None):
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    spec = load_spec(tiny_spec_path).model_copy(update={"tracking": TrackingConfig(wandb=wandb)})
    RunDir(run_dir).write_spec_copy(spec)
    return run_dir


def test_the_plan_logs_beside_the_sweep_and_holds_no_key(tmp_path, tiny_spec_path, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", SECRET)
    wandb = WandbConfig(mode="offline", project="cpt-ecommerce", entity="team")
    run_dir = _tracked_run(tmp_path, tiny_spec_path, wandb)
    plan = make_plan(run_dir, CONFIG)
    assert plan.wandb == wandb
    flags = {group[0]: group[1:] for group in megatron_args(plan)}
    assert flags["--wandb-project"] == ["cpt-ecommerce"] and flags["--wandb-entity"] == ["team"]
    assert flags["--wandb-exp-name"] == [plan.id]
    assert flags["--wandb-save-dir"] == ["/lustre/runs/cpt/wandb"]
    directory = write_plan(plan, run_dir)
    assert 'export WANDB_MODE="${WANDB_MODE:-offline}"' in directory.launch_script.read_text()
    assert not any(SECRET in path.read_text() for path in directory.path.iterdir() if path.is_file())


@pytest.mark.parametrize("wandb", [None, WandbConfig(mode="disabled")])
def test_a_sweep_without_wandb_gives_a_plan_without_its_flags(tmp_path, tiny_spec_path, wandb):
    plan = make_plan(_tracked_run(tmp_path, tiny_spec_path, wandb), CONFIG)
    assert plan.wandb is None
    assert not any(group[0].startswith("--wandb") for group in megatron_args(plan))
    assert "WANDB_MODE" not in write_plan(plan, tmp_path).launch_script.read_text()


def test_megatron_lm_own_parser_reads_the_wandb_flags(tmp_path, tiny_spec_path, monkeypatch):
    """Where Megatron-LM's training package is importable (see docs/full-run.md), it reads the flags as the plan
    means them; elsewhere skipped, naming what is missing."""
    arguments = megatron_lm.megatron_training()
    plan = make_plan(_tracked_run(tmp_path, tiny_spec_path, WandbConfig(mode="online", project="p")), CONFIG)
    tokens = [item for group in megatron_args(plan) for item in group]
    monkeypatch.setattr("sys.argv", ["pretrain_gpt.py", *tokens])
    monkeypatch.setenv("WORLD_SIZE", str(plan.cluster.gpus))
    monkeypatch.setenv("RANK", "0")
    args = arguments.parse_args()
    assert (args.wandb_project, args.wandb_exp_name, args.wandb_save_dir) == ("p", plan.id, "/lustre/runs/cpt/wandb")
