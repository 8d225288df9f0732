"""best.json's pick is checked field by field against what it is made of before it is promoted: its source, its
trials and measured figures against the study, its intervals against its own mean and spreads through the
surrogate's constructor, P against its forgetting prediction and the sweep's rule; every trial row against the
study's. Each edit is exit 2 naming best.json, the field and both values, with nothing written (issue 52: an
interval edited to 0.5 became the plan's watch bound; a mean outside its interval, P of 5 and source 'ladder' were
copied into plan.json)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from cli import main
from tests.hostile import files_but_the_study
from tests.sweep.promote.promote_runs import surrogate_pick, write_run


def pick(key: str, value: Any) -> Callable[[dict], None]:
    return lambda data: data["pick"].update({key: value})


def predicted(metric: str, key: str, value: Any) -> Callable[[dict], None]:
    return lambda data: data["pick"][metric].update({key: value})


def at_point(key: str, value: Any) -> Callable[[dict], None]:
    return lambda data: data["pick"]["point"].update({key: value})


EDITS = {
    "an interval's end": (predicted("forgetting", "high", 0.5), "pick.forgetting.high is 0.5, but its mean and spreads "
                          "give 0.0184"),
    "a mean outside its interval": (predicted("gain", "mean", 0.9), "pick.gain.low is 0.2234"),
    "a spread": (predicted("forgetting", "sd", 0.0001), "pick.forgetting.low is 0.01"),
    "P of 5": (pick("probability_within_budget", 5), "pick.probability_within_budget is 5.0, but a probability "
               "lies in"),
    "P not its prediction's": (pick("probability_within_budget", 0.95), "pick.probability_within_budget is 0.95, but "
                               "its forgetting prediction gives 0.970"),
    "source ladder": (pick("source", "ladder"), "pick.source is 'ladder', but a sweep's pick is the surrogate's or"),
    "another rule": (pick("min_probability", 0.5), "pick.min_probability is 0.5, but the sweep's rule asks 0.9"),
    "a domain share not its mix's": (at_point("domain_share", 0.9), "pick.point.domain_share is 0.9, but its mix 1:2"),
    "trials that ran elsewhere": (at_point("trials", [7]), "pick.point names trial 7 at 0.13 @ 1:2, but the study "
                                  "ran it at 0.1 @ 1:1"),
    "its confirmation trials": (at_point("trials", [8]), "pick.point.trials is [8], but trial 8 is no completed "
                                "trial of the study at 0.13 @ 1:2"),  # measured on its own draw: not the pool's
    "a measured figure without trials": (at_point("measured_gain", 0.3), "pick.point.measured_gain is 0.3, but its "
                                         "trials [] measured None"),
    "a row's figure": (lambda data: data["best_observed"].update(wall_seconds=1.0), "best_observed.wall_seconds is "
                       "1.0, but the study's trial 7 has 60.0"),
    "a Pareto row's figure": (lambda data: data["pareto_front"][0].update(general_loss=9.0), "pareto_front.0."
                              "general_loss is 9.0, but the study's trial 7 has 3.5"),
}  # fmt: skip


@pytest.mark.parametrize("edit", EDITS.values(), ids=list(EDITS))
def test_an_edited_pick_is_exit_2_naming_the_field_and_both_values(edit, tmp_path, capsys):
    change, message = edit
    run_dir = write_run(tmp_path / "runs" / "lr_mix", pick=surrogate_pick(0.13, "1:2"))
    path = run_dir / "best.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    before = files_but_the_study(tmp_path)

    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b", "--unconfirmed"]) == 2

    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {path}: ") and message in line, line
    assert files_but_the_study(tmp_path) == before


def test_a_picks_trials_without_their_figures_are_exit_2(tmp_path, capsys):
    run_dir = write_run(tmp_path / "runs" / "lr_mix")  # the pick is the best observed trial 7's point
    path = run_dir / "best.json"
    data = json.loads(path.read_text())
    at_point("measured_gain", None)(data)
    path.write_text(json.dumps(data))
    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {path}: pick.point.measured_gain is None, but its trials [7] measured 0.21"), line


def test_an_untouched_pick_and_an_observed_one_are_promoted(tmp_path):
    assert main(["promote", "plan", str(write_run(tmp_path / "a", pick=surrogate_pick(0.13, "1:2"))),
                 "--target", "llama3.1-8b"]) == 0  # fmt: skip
    assert main(["promote", "plan", str(write_run(tmp_path / "b")), "--target", "llama3.1-8b"]) == 0


@pytest.mark.parametrize("argv", [["status", "{run}"], ["report", "{run}"]])
def test_status_and_report_show_the_studys_pick_never_an_edited_best_json(argv, tmp_path, capsys):
    """What they print is computed from the study with the functions best.json is written with: an lr_fraction of 5
    or a mix of "abc" edited into best.json is never shown."""
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    path = run_dir / "best.json"
    data = json.loads(path.read_text())
    data["pick"]["point"].update(lr_fraction=5, mix="abc")
    path.write_text(json.dumps(data))
    assert main([part.format(run=run_dir) for part in argv]) == 0
    shown = capsys.readouterr().out
    if argv[0] == "report":
        shown = (run_dir / "report" / "report.md").read_text()
    assert "pick: lr_fraction 0.1 (peak LR 0.0003), mix 1:1" in shown.replace("\n", " ") or "| 0.1 |" in shown
    assert "abc" not in shown and "lr_fraction 5 " not in shown


@pytest.mark.parametrize(("value", "bound"), [(-1.0, "greater than or equal to 0"), (1.34e154, "less than or equal to 100")])
def test_a_spread_no_loss_difference_has_is_refused_as_read(value, bound, tmp_path, capsys):
    """Predictions are bounded as the losses they compare are (MAX_LOSS): a negative spread, or one so large that the
    intervals the check rebuilds from it overflow (the long fuzz's 1.34e154), is a summary cpt-sweep did not write."""
    run_dir = write_run(tmp_path / "runs" / "lr_mix", pick=surrogate_pick(0.13, "1:2"))
    path = run_dir / "best.json"
    data = json.loads(path.read_text())
    data["pick"]["forgetting"]["noise_sd"] = value
    path.write_text(json.dumps(data))
    before = files_but_the_study(tmp_path)

    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b", "--unconfirmed"]) == 2

    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"{path} is not a sweep summary cpt-sweep wrote: pick.forgetting.noise_sd: Input should be {bound}" in line
    assert files_but_the_study(tmp_path) == before
