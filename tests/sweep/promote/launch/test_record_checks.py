"""`sweep promote watch` holds a run only to a plan and a job record that are what their sources give: plan.json's
promoted point best.json's, its prediction that point's, its share, sets and iterations their sources'; a job's watch
and steps its plan's. Each edit is exit 2 naming the file, the field and both values, with nothing written (issue
52: plan.json's forgetting_upper 0.9 or a null prediction, and a rehearsal's job.json with its validation sets
reordered, giving negative forgetting, were believed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cli import main
from sweep.files.compat import JOB
from sweep.files.records import read_model
from sweep.promote.launch.watching import forced_overshoot
from tests.hostile import files_but_the_study
from tests.sweep.promote.launch.test_watch_report import MEGATRON_LOG, rehearsed
from tests.sweep.promote.promote_runs import surrogate_pick, write_run
from train_entry.fullrun.config import JOB_JSON, JobConfig

LOSSES = {0: (2.0, 3.0), 10: (2.01, 2.7), 20: (2.2, 2.6)}


def edited(path: Path, change: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def swap_sets(data: dict) -> None:
    valid = data["run"]["data"]["valid"]
    valid[0], valid[1] = valid[1], valid[0]


PLAN_EDITS = {
    "an upper bound": (lambda d: d["prediction"]["points"][-1].update(forgetting_upper=0.9), "prediction.points."),
    "no prediction": (lambda d: d.update(prediction=None), "prediction is None, but the promoted point gives {"),
    "the promoted point": (lambda d: d["sweep"]["promoted"].update(lr_fraction=0.2), "sweep.promoted.lr_fraction is "
                           "0.2, but best.json (checked against the study) gives 0.13"),
    "its interval": (lambda d: d["sweep"]["promoted"]["forgetting_interval"].__setitem__(1, 0.9), "sweep.promoted."
                     "forgetting_interval.1 is 0.9"),
    "the share": (lambda d: d["sweep"].update(non_english_share=0.3), "sweep.non_english_share is 0.3, but the "
                  "promoted point's proxy trial gives 0.0"),
    "the sets' order": (swap_sets, "run.data.valid (sides) is ['domain', 'general'], but Megatron-LM's order of the "
                        "plan's sets gives ['general', 'domain']"),
    "its iterations": (lambda d: d["run"]["optimization"].update(train_iters=90000), "run.optimization.train_iters is "
                       "90000, but its tokens over its global batch gives 84772"),
}  # fmt: skip


@pytest.mark.parametrize("edit", PLAN_EDITS.values(), ids=list(PLAN_EDITS))
def test_an_edited_plan_is_not_watched_against(edit, tmp_path, capsys):
    change, message = edit
    run_dir = write_run(tmp_path / "runs" / "lr_mix", pick=surrogate_pick(0.13, "1:2"), non_english_share=0.0)
    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b"]) == 0
    (plan_dir,) = (run_dir / "promotion").iterdir()
    edited(plan_dir / "plan.json", change)
    log = tmp_path / "pretrain_gpt.log"
    log.write_text("\n".join(line for line in MEGATRON_LOG.splitlines() if "validation-2" not in line) + "\n")
    before = files_but_the_study(tmp_path)
    capsys.readouterr()

    assert main(["promote", "watch", str(run_dir), "--log", str(log)]) == 2

    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {plan_dir / 'plan.json'}: ") and message in line, line
    assert files_but_the_study(tmp_path) == before


def set_order(data: dict) -> None:
    data["watch"]["sets"] = list(reversed(data["watch"]["sets"]))


JOB_EDITS = {
    "the sets' order": (set_order, "watch.sets.0 is 'domain', but plan "),
    "an upper bound": (lambda d: d["watch"]["prediction"]["points"][-1].update(forgetting_upper=0.9),
                       "watch.prediction.points."),
    "no prediction": (lambda d: d["watch"].update(prediction=None), "watch.prediction is None, but plan "),
    "its tokens per iteration": (lambda d: d["watch"].update(tokens_per_iteration=1),
                                 "watch.tokens_per_iteration is 1"),
    "its steps": (lambda d: d.update(steps=400), "steps is 400, but plan "),
}  # fmt: skip


@pytest.mark.parametrize("edit", JOB_EDITS.values(), ids=list(JOB_EDITS))
def test_an_edited_job_record_is_not_watched(edit, tmp_path, capsys):
    change, message = edit
    run_dir = tmp_path / "runs" / "lr_mix"
    (job,) = rehearsed(run_dir, LOSSES).rglob(JOB_JSON)
    edited(job, change)
    before = files_but_the_study(tmp_path)
    capsys.readouterr()

    assert main(["promote", "watch", str(run_dir)]) == 2

    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {job}: ") and message in line, line
    assert files_but_the_study(tmp_path) == before


def test_a_job_held_to_the_overshoot_drill_or_stopping_is_its_plans(tmp_path, capsys):
    run_dir = tmp_path / "runs" / "lr_mix"
    (job,) = rehearsed(run_dir, LOSSES).rglob(JOB_JSON)
    config = read_model(job, JobConfig, fmt=JOB)
    drill = forced_overshoot(config.watch, config.steps * config.watch.tokens_per_iteration)
    drilled = {"prediction": drill.prediction.model_dump(mode="json"), "stop_on_forgetting": True}
    edited(job, lambda data: data["watch"].update(drilled))
    assert main(["promote", "watch", str(run_dir)]) == 0
    assert "TRIPPED" in capsys.readouterr().out
