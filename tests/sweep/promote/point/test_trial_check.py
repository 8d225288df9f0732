"""A trial's resolved config is checked against what it was resolved from before the plan takes its schedule, LR
floor, share and base from it: the study's plan and trial, and the run's spec copy. Each edit is exit 2 naming the
file, the field and both values, with nothing written (issue 52: trial_config.json's non_english_share, schedule
and min_lr_ratio edits changed the full run's blend and LR flags)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from cli import main
from tests.hostile import files_but_the_study
from tests.sweep.promote.promote_runs import write_run


def proxy(key: str, value: object) -> Callable[[dict], None]:
    return lambda data: data["proxy"].update({key: value})


def top(key: str, value: object) -> Callable[[dict], None]:
    return lambda data: data.update({key: value})


EDITS = {
    "non_english_share": (top("non_english_share", 0.5), "non_english_share is 0.5, but the run's spec copy gives 0.1"),
    "schedule": (proxy("schedule", "linear"), "proxy.schedule is 'linear', but the sweep's plan in its study gives "
                 "'cosine'"),
    "min_lr_ratio": (proxy("min_lr_ratio", 0.5), "proxy.min_lr_ratio is 0.5, but the sweep's plan in its study gives "
                     "0.1"),
    "warmup_steps": (proxy("warmup_steps", 1), "proxy.warmup_steps is 1, but the sweep's plan in its study gives 20"),
    "max_lr": (top("max_lr", 0.3), "max_lr is 0.3, but the sweep's plan in its study gives 0.003"),
    "base losses": (lambda data: data["base_losses"].update(general_loss=1.0), "base_losses.general_loss is 1.0, but "
                    "the study's trial 7 gives 3.4"),
    "seed": (top("seed", 5), "seed is 5, but the study's trial 7 gives 0"),
    "point": (top("lr_fraction", 0.2), "lr_fraction is 0.2, but the study's trial 7 gives 0.1"),
    "validation draw": (lambda data: data.update(valid_draw=1, draw_valid=data["valid"]),
                        "valid_draw is 1, but the study's trial 7 gives 0"),
}  # fmt: skip


@pytest.mark.parametrize("edit", EDITS.values(), ids=list(EDITS))
def test_an_edited_trial_config_is_exit_2_naming_the_field_and_both_values(edit, tmp_path, capsys):
    change, message = edit
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    path = run_dir / "trials" / "0007" / "trial_config.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    before = files_but_the_study(tmp_path)

    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b"]) == 2

    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {path}: {message}; the trial wrote another config than this"), line
    assert files_but_the_study(tmp_path) == before


def test_a_spec_copy_without_non_english_data_says_a_share_of_0(tmp_path, capsys):
    run_dir = write_run(tmp_path / "runs" / "lr_mix", non_english_share=0.0)
    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b"]) == 0
    path = run_dir / "trials" / "0007" / "trial_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "non_english_share": 0.1}))
    capsys.readouterr()
    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b"]) == 2
    assert "non_english_share is 0.1, but the run's spec copy gives 0.0" in capsys.readouterr().err
