"""A hand-edited best.json is not promoted as it says: the point is checked against the searched space and the
study's trials, and a confirmation against the study's confirmation trials; each edit is exit 2 naming the file,
the key and what the study holds, with nothing written."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli import main
from tests.fuzzing import LONG, SHORT, damaged, leaves, replaced
from tests.hostile import files_but_the_study as files
from tests.hostile import tree
from tests.sweep.promote.promote_runs import confirmed, surrogate_pick, write_run


def edited(run_dir: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    path = run_dir / "best.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))
    return path


def promote(run_dir: Path, *flags: str) -> int:
    return main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b", *flags])


def observed(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda data: data["best_observed"].update({key: value})


EDITS = {
    "best_observed.mix abc": (observed("mix", "abc"), "best_observed.mix is 'abc', not a mix of the searched space "
                              "(listed: 2:1, 1:1, 1:2, 1:4)"),
    "best_observed.mix 1:0": (observed("mix", "1:0"), "best_observed.mix is '1:0', not a mix of the searched space"),
    "best_observed.lr_fraction 5": (
        observed("lr_fraction", 5),
        "best_observed.lr_fraction is 5, outside the searched lr_fraction (0.05-0.2)",
    ),
    "best_observed.domain_gain": (
        observed("domain_gain", 0.5),
        "best_observed names trial 7 with domain_gain 0.5 and forgetting 0.015, but the study measured 0.21 and 0.015",
    ),
    "best_observed.number of no trial": (
        observed("number", 99),
        "best_observed names trial 99, but the study has no such trial, not a completed trial",
    ),
    "best_observed.lr_fraction of another point": (
        observed("lr_fraction", 0.15),
        "best_observed names trial 7 at 0.15 @ 1:1, but the study ran it at 0.1 @ 1:1",
    ),
}  # fmt: skip


@pytest.mark.parametrize("edit", EDITS.values(), ids=list(EDITS))
def test_a_hand_edited_best_observed_trial_is_exit_2_naming_the_key(edit, tmp_path, capsys):
    change, message = edit
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    path = edited(run_dir, change)
    before = files(tmp_path)

    assert promote(run_dir, "--observed") == 2

    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {path}: ") and message in line
    assert files(tmp_path) == before


def test_a_pick_edited_out_of_the_searched_space_is_exit_2(tmp_path, capsys):
    """lr_fraction 5 was planned as "peak LR 0.0015 = lr_fraction 5 x max_lr 0.0003"."""
    run_dir = write_run(tmp_path / "runs" / "lr_mix", pick=surrogate_pick(0.13, "1:2"))
    path = edited(run_dir, lambda data: data["pick"]["point"].update(lr_fraction=5))
    before = files(tmp_path)

    assert promote(run_dir, "--unconfirmed") == 2

    error = capsys.readouterr().err
    assert f"{path}: pick.point.lr_fraction is 5, outside the searched lr_fraction (0.05-0.2)" in error
    assert files(tmp_path) == before


@pytest.mark.parametrize("key", ["gain", "forgetting", "probability_within_budget"])
def test_a_surrogate_pick_without_its_prediction_is_exit_2(key, tmp_path, capsys):
    """Found by the long fuzz: a nulled pick.gain was an AttributeError in promotion under --unconfirmed."""
    run_dir = write_run(tmp_path / "runs" / "lr_mix", pick=surrogate_pick(0.13, "1:2"))
    path = edited(run_dir, lambda data: data["pick"].update({key: None}))
    before = files(tmp_path)

    assert promote(run_dir, "--unconfirmed") == 2

    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {path}") and f"a surrogate's pick carries its {key}, not null" in line
    assert files(tmp_path) == before


def test_a_confirmation_edited_to_confirmed_is_refused_by_its_trials_unless_unconfirmed(tmp_path, capsys):
    pick = surrogate_pick(0.13, "1:2")
    run_dir = write_run(tmp_path / "runs" / "lr_mix", pick=pick, confirmation=confirmed(pick, forgetting=0.026))

    def claim_confirmed(data: dict[str, Any]) -> None:
        data["confirmation"]["outcome"] = "confirmed"
        data["confirmation"]["rounds"][-1].update(within_budget=True, forgetting={"mean": 0.017, "sd": 0.001})

    path = edited(run_dir, claim_confirmed)
    before = files(tmp_path)

    assert promote(run_dir) == 2

    assert (
        f"{path}: confirmation.outcome is 'confirmed', but its confirmation trials 8, 9 measured mean forgetting "
        "0.0260, over the sweep's budget 0.02: the pick is not confirmed; promote it anyway with --unconfirmed"
    ) in capsys.readouterr().err
    assert files(tmp_path) == before
    assert promote(run_dir, "--unconfirmed") == 0


def test_a_confirmation_naming_trials_that_confirm_nothing_is_refused(tmp_path, capsys):
    pick = surrogate_pick(0.13, "1:2")
    run_dir = write_run(tmp_path / "runs" / "lr_mix", pick=pick)
    path = edited(run_dir, lambda data: data["confirmation"]["rounds"][-1].update(trials=[7, 8]))

    assert promote(run_dir) == 2

    assert (
        f"{path}: confirmation.outcome is 'confirmed', but the study's confirmation trials say otherwise: "
        "trial 7 is not a confirmation trial of round 0"
    ) in capsys.readouterr().err


def test_a_best_json_without_its_study_is_not_promoted(tmp_path, capsys):
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    (run_dir / "optuna.db").unlink()

    assert promote(run_dir) == 2

    assert f"{run_dir / 'best.json'} cannot be checked against the study it summarises" in capsys.readouterr().err
    assert not (run_dir / "promotion").exists()


def test_an_untouched_run_is_promoted(tmp_path):
    pick = surrogate_pick(0.13, "1:2")
    assert promote(write_run(tmp_path / "runs" / "a", pick=pick)) == 0
    assert promote(write_run(tmp_path / "runs" / "b"), "--observed") == 0


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return write_run(tmp_path_factory.mktemp("fuzz") / "runs" / "lr_mix", pick=surrogate_pick(0.13, "1:2"))


@SHORT
@given(data=st.data())
def test_random_edits_of_best_json_are_promoted_or_exit_2_in_one_line(finished, data, tmp_path, capsys):
    """A random value at a random key, or random damage to the bytes: a plan, or one line of error; never a
    traceback, and nothing written outside the run directory."""
    edit_and_promote(finished, data, tmp_path, capsys)


@pytest.mark.slow
@LONG
@given(data=st.data())
def test_long_fuzz_of_best_json(finished, data, tmp_path, capsys):
    edit_and_promote(finished, data, tmp_path, capsys)


def edit_and_promote(finished: Path, data: st.DataObject, tmp_path: Path, capsys) -> None:
    run_dir = tmp_path / "runs" / "lr_mix"
    shutil.rmtree(tmp_path / "runs", ignore_errors=True)
    shutil.copytree(finished, run_dir)
    path, valid = run_dir / "best.json", (finished / "best.json").read_bytes()
    if data.draw(st.booleans()):
        document = json.loads(valid)
        places = [at for at, _ in leaves(document)]
        document = replaced(document, data.draw(st.sampled_from(places)), data.draw(JSON_VALUES))
        path.write_text(json.dumps(document))
    else:
        path.write_bytes(data.draw(damaged(valid)))
    capsys.readouterr()
    outside = {name: info for name, info in tree(tmp_path).items() if not name.startswith("runs")}

    code = promote(run_dir, "--unconfirmed")

    error = capsys.readouterr().err
    assert code in (0, 2) and "Traceback" not in error
    assert code == 0 or len(error.strip().splitlines()) == 1
    assert {name: info for name, info in tree(tmp_path).items() if not name.startswith("runs")} == outside
