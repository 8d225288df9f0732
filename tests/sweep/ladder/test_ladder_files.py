"""A ladder's ladder.json is read back as untrusted: corrupt or hostile content (a rung name that would lead out of
the ladder, finished rungs that were never planned, no rungs at all) is exit 2 naming the file, for every verb that
reads it, and nothing is created or changed; a rung folder that is a symlink out of the ladder is not read."""

from __future__ import annotations

import json

import pytest

from cli import main
from sweep.files.compat import LADDER
from sweep.files.records import CorruptFile
from sweep.files.rundir import RunDir
from sweep.ladder.driver import run_ladder
from tests.sweep.ladder.test_ladder import Quiet, RecordedRungs, ScriptedRungs, ladder_spec, snapshot  # noqa: F401


def _with(**changes):
    return lambda summary: summary | changes


def _renamed_rung(summary):
    rungs = [summary["rungs"][0] | {"name": "/etc"}, *summary["rungs"][1:]]
    return summary | {"rungs": rungs}


def _prediction_of(rung):
    return lambda summary: summary | {"prediction": summary["prediction"] | {"rung": rung}}


HOSTILE = {
    "not JSON": "{planned: oops",
    "no keys but its version": LADDER.dumps_data({}),
    "a list": "[]",
    "wrong types": _with(target=3, planned="xs"),
    "an infinite value": _with(trial_tokens_per_parameter="Infinity"),
    "a rung path escaping the ladder": _with(planned=["../../../outside", "s", "m"]),
    "an absolute rung name": _renamed_rung,
    "finished rungs not planned": lambda summary: summary | {"rungs": summary["rungs"][::-1]},
    "no rungs planned": _with(planned=[], rungs=[]),
    "a size of an unplanned rung": _with(sizes={"../x": 5}),
    "the prediction of another rung": _prediction_of("xs"),
}
VERBS = {
    "status": ["status"],
    "report": ["report"],
    "promote": ["promote", "plan", "--target", "llama3.1-70b"],
}


_WRITTEN: list[str] = []
"""ladder.json of one scripted ladder, written by the first test that asks and copied by the others."""


@pytest.fixture
def ladder(ladder_spec, tmp_path):  # noqa: F811 - the fixture imported above
    run = RunDir(tmp_path / "runs" / "ladder")
    run_ladder(ladder_spec, run, fresh=False, view=Quiet(), run_rung=RecordedRungs(run))
    return run


@pytest.fixture
def written(ladder_spec, tmp_path_factory) -> dict:  # noqa: F811
    if not _WRITTEN:
        run = RunDir(tmp_path_factory.mktemp("written") / "ladder")
        run_ladder(ladder_spec, run, fresh=False, view=Quiet(), run_rung=ScriptedRungs(run))
        _WRITTEN.append(run.ladder_json.read_text())
    return json.loads(_WRITTEN[0])


@pytest.mark.parametrize("hostile", HOSTILE.values(), ids=list(HOSTILE))
@pytest.mark.parametrize("verb", VERBS.values(), ids=list(VERBS))
def test_a_corrupt_or_hostile_ladder_json_is_exit_2_naming_it_and_touches_nothing(
    written, verb, hostile, tmp_path, capsys
):
    """Every verb reads ladder.json before anything else of the ladder, so the file alone is the case."""
    ladder = RunDir(tmp_path / "runs" / "ladder")
    ladder.path.mkdir(parents=True)
    text = hostile if isinstance(hostile, str) else json.dumps(hostile(written)).replace('"Infinity"', "Infinity")
    ladder.ladder_json.write_text(text)
    before = snapshot(tmp_path)
    argv = [*verb[:-2], str(ladder.path), *verb[-2:]] if verb[0] == "promote" else [*verb, str(ladder.path)]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert f"{ladder.ladder_json} is not a ladder summary cpt-sweep wrote" in error, error
    assert len(error.strip().splitlines()) == 1
    assert snapshot(tmp_path) == before


def test_the_unchanged_ladder_json_is_read(written, tmp_path, capsys):
    """The cases above differ from a file every verb accepts only in what they change."""
    ladder = RunDir(tmp_path / "runs" / "ladder")
    ladder.path.mkdir(parents=True)
    ladder.ladder_json.write_text(json.dumps(written))
    assert main(["status", str(ladder.path)]) == 0
    assert "rung xs (1 of 3), N 92,480: not started" in capsys.readouterr().out


def test_a_rerun_refuses_a_hostile_ladder_json_before_any_rung_runs(ladder_spec, ladder):  # noqa: F811
    ladder.ladder_json.write_text(LADDER.dumps_data({"planned": ["../../../outside", "s", "m"]}))
    rungs = ScriptedRungs(ladder)
    with pytest.raises(CorruptFile, match="ladder.json is not a ladder summary"):
        run_ladder(ladder_spec, ladder, fresh=False, view=Quiet(), run_rung=rungs)
    assert rungs.started == []


def test_status_does_not_follow_a_rung_folder_that_is_a_symlink_out_of_the_ladder(ladder, tmp_path, capsys):
    outside = tmp_path / "outside"
    ladder.rung("xs").path.rename(outside)
    ladder.rung("xs").path.symlink_to(outside, target_is_directory=True)
    assert main(["status", str(ladder.path)]) == 2
    error = capsys.readouterr().err
    assert "leads outside the run directory" in error and len(error.strip().splitlines()) == 1
