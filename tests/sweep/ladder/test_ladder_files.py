"""A ladder's ladder.json is read back as untrusted: corrupt or hostile content (a rung name that would lead out of
the ladder, finished rungs that were never planned, no rungs at all, evaluations out of bounds) is exit 2 naming the
file, for every verb that reads it, and nothing is created or changed; a rung folder that is a symlink out of the
ladder is not read."""

from __future__ import annotations

import json
import shutil

import optuna
import pytest

from cli import main
from sweep.files.compat import FORMAT_KEY, LADDER
from sweep.files.records import CorruptFile
from sweep.files.rundir import RunDir
from tests.sweep.ladder.ladder_runs import STOPPED, LawRungs, scripted_ladder, write_ladder_spec


def snapshot(root) -> list:
    """Every file with its mtime, but SQLite's: any reader of a WAL-mode study makes its -wal and -shm, and the
    last connection to close folds the WAL into the database file and removes them (whether the ladder's own
    connections are closed by then is up to the GC). The studies are compared by their trials instead."""
    sqlite = (".db", ".db-wal", ".db-shm")
    files = sorted((path, path.stat().st_mtime_ns) for path in root.rglob("*") if path.is_file())
    studies = {
        path: [(t.number, t.state, t.params, t.values) for t in optuna.load_study(
            study_name=None, storage=f"sqlite:///{path}").get_trials()]
        for path in sorted(root.rglob("*.db"))
    }  # fmt: skip
    return [entry for entry in files if not entry[0].name.endswith(sqlite)] + sorted(studies.items())


def _with(**changes):
    return lambda summary: summary | changes


def _renamed_rung(summary):
    rungs = [summary["rungs"][0] | {"name": "/etc"}, *summary["rungs"][1:]]
    return summary | {"rungs": rungs}


def _observation(**changes):
    return lambda summary: summary | {"observations": [summary["observations"][0] | changes]}


HOSTILE = {
    "not JSON": "{planned: oops",
    "no keys but its version": LADDER.dumps_data({}),
    "a list": "[]",
    "wrong types": _with(target=3, rungs="xs"),
    "an infinite value": _with(forgetting_budget="Infinity"),
    "a rung path escaping the ladder": lambda summary: (
        summary | {"rungs": [summary["rungs"][0] | {"name": "../../../outside"}, *summary["rungs"][1:]]}
    ),
    "an absolute rung name": _renamed_rung,
    "finished rungs not planned": lambda summary: summary | {"finished": summary["finished"][::-1]},
    "no rungs planned": _with(rungs=[], finished=[]),
    "a loss out of bounds": _observation(general_loss=1e9),
    "a negative parameter count": _observation(parameters=-5),
}
VERBS = {
    "status": ["status"],
    "report": ["report"],
    "promote": ["promote", "plan", "--target", "llama3.1-70b"],
}


@pytest.fixture
def written(scripted_ladder_run) -> dict:
    """ladder.json of a scripted ladder stopped after its first two rungs."""
    return json.loads((scripted_ladder_run.parents[1] / STOPPED).read_text())


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


@pytest.mark.parametrize("version", [None, LADDER.version + 1, "1"], ids=["none", "a later one", "a string"])
def test_a_ladder_json_of_another_format_version_is_exit_2_saying_which_version_this_build_reads(
    written, version, tmp_path, capsys
):
    ladder = RunDir(tmp_path / "runs" / "ladder")
    ladder.path.mkdir(parents=True)
    stamped = {key: value for key, value in written.items() if key != FORMAT_KEY}
    ladder.ladder_json.write_text(json.dumps(stamped | ({} if version is None else {FORMAT_KEY: version})))
    before = snapshot(tmp_path)
    assert main(["status", str(ladder.path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert (
        line.startswith(f"error: {ladder.ladder_json}: ")
        and f"reads ladder summary format {LADDER.version} only" in line
    )
    assert snapshot(tmp_path) == before


def test_the_unchanged_ladder_json_is_read(written, tmp_path, capsys):
    """The cases above differ from a file every verb accepts only in what they change."""
    ladder = RunDir(tmp_path / "runs" / "ladder")
    ladder.path.mkdir(parents=True)
    ladder.ladder_json.write_text(json.dumps(written))
    assert main(["status", str(ladder.path)]) == 0
    assert "rung xxs (1 of 4), N 46,272: not started" in capsys.readouterr().out


def test_a_rerun_refuses_a_hostile_ladder_json_before_any_rung_runs(write_tiny_spec, tmp_path):
    spec = write_ladder_spec(write_tiny_spec, "hostile_rerun.yaml")
    ladder = RunDir(tmp_path / "runs" / "ladder")
    ladder.path.mkdir(parents=True)
    ladder.ladder_json.write_text(LADDER.dumps_data({"rungs": [{"name": "../../../outside"}]}))
    rungs = LawRungs()
    with pytest.raises(CorruptFile, match="ladder.json is not a ladder summary"):
        scripted_ladder(spec, tmp_path, rungs)
    assert rungs.started == []


def test_status_does_not_follow_a_rung_folder_that_is_a_symlink_out_of_the_ladder(
    scripted_ladder_run, tmp_path, capsys
):
    ladder = RunDir(tmp_path / "ladder")
    shutil.copytree(scripted_ladder_run, ladder.path)
    outside = tmp_path / "outside"
    ladder.rung("xxs").path.rename(outside)
    ladder.rung("xxs").path.symlink_to(outside, target_is_directory=True)
    assert main(["status", str(ladder.path)]) == 2
    error = capsys.readouterr().err
    assert "leads outside the run directory" in error and len(error.strip().splitlines()) == 1
