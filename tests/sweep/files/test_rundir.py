"""A run directory: names are one path component, nothing outside the run is touched, --fresh keeps the old run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from cli import main
from sweep.files.compat import FORMAT_KEY, SPEC, WRITTEN_BY
from sweep.files.config_file import SpecError
from sweep.files.rundir import TRASH, RunDir, RunDirError, RunRecord, check_run_name
from sweep.spec.spec import load_spec, spec_content


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under root (links not followed) with a file's bytes: what a command must leave as it was."""
    found: dict[str, bytes | None] = {}
    for directory, folders, files in os.walk(root):
        for name in folders + files:
            path = Path(directory) / name
            found[str(path.relative_to(root))] = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    return found


def test_spec_copy_loads_from_the_run_directory(tiny_spec_path: Path, tmp_path: Path):
    """The copy must not depend on the original spec's folder: its relative corpus paths are resolved."""
    spec = load_spec(tiny_spec_path)
    run = RunDir(tmp_path / "elsewhere" / "run")
    run.path.mkdir(parents=True)
    run.write_spec_copy(spec)
    copy = load_spec(run.spec_copy)
    assert copy == spec
    assert all(path.is_absolute() for path in copy.data.domain.train)
    assert run.spec_copy.read_text().startswith(f"# written by {WRITTEN_BY}\n{FORMAT_KEY}: {SPEC.version}\n")


@pytest.mark.parametrize("version", [None, SPEC.version + 1, "one"])
def test_a_spec_copy_of_another_format_is_refused_naming_it_while_a_written_spec_needs_no_version(
    version, tiny_spec_path, tmp_path
):
    written = yaml.safe_load(tiny_spec_path.read_text())
    assert FORMAT_KEY not in written and load_spec(tiny_spec_path)  # a spec a person writes carries none
    copy = tmp_path / "spec.yaml"
    copy.write_text(yaml.safe_dump(written | ({} if version is None else {FORMAT_KEY: version})))
    content = copy.read_bytes()
    if version is None:
        with pytest.raises(SpecError, match=f"{copy}: no {FORMAT_KEY} "):
            spec_content(copy, copy=True)  # the copy a run keeps must say its version
    else:
        with pytest.raises(SpecError, match=f"^{copy}: .*this {WRITTEN_BY} reads spec format {SPEC.version} only"):
            load_spec(copy)
    assert copy.read_bytes() == content


@pytest.mark.parametrize(
    "name", [".", "..", "../../x", "/tmp/cpt-abs", "a/b", "x\ny", "", " lead", "-rf", ".hidden", "a" * 101]
)
def test_a_run_name_that_is_not_one_plain_component_is_refused_before_anything_is_touched(
    name, tiny_spec_path, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "runs" / "other"
    other.mkdir(parents=True)
    (other / "best.json").write_text("{}")
    (tmp_path / "keep.txt").write_text("mine")
    before = tree(tmp_path)

    assert main(["run", str(tiny_spec_path), f"--name={name}", "--fresh"]) == 2

    error = capsys.readouterr().err
    assert "is not one plain path component" in error and len(error.splitlines()) == 1
    assert tree(tmp_path) == before
    assert not Path("/tmp/cpt-abs").exists()


def test_a_spec_whose_file_name_is_no_run_name_asks_for_name(write_tiny_spec, tmp_path, monkeypatch, capsys):
    spec = write_tiny_spec("my spec.yaml")
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(spec)]) == 2
    assert "(the spec file's name)" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_a_symlinked_run_directory_is_refused_and_what_it_points_at_is_left_alone(
    tiny_spec_path, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "data.txt").write_text("do not delete")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "linked").symlink_to(outside)
    before = tree(tmp_path)

    assert main(["run", str(tiny_spec_path), "--name", "linked", "--fresh"]) == 2

    assert "is a symbolic link" in capsys.readouterr().err
    assert tree(tmp_path) == before


def test_inside_refuses_a_path_that_a_symlink_in_the_run_leads_out_of(tmp_path):
    run = RunDir(tmp_path / "runs" / "r")
    run.path.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    run.report.symlink_to(tmp_path / "elsewhere")
    assert run.inside(run.best_json) == run.best_json
    with pytest.raises(RunDirError, match="leads outside the run directory"):
        run.inside(run.report / "index.html")
    (run.path / "loop").symlink_to(run.path / "loop")
    with pytest.raises(RunDirError, match="cannot resolve"):
        run.inside(run.path / "loop" / "x")


def test_fresh_moves_the_old_run_into_the_trash_and_keeps_the_lock(tmp_path):
    run = RunDir(tmp_path / "runs" / "r")
    run.trial(0).mkdir(parents=True)
    run.best_json.write_text("{}")
    run.lock.write_text("")
    trash = run.move_to_trash(keep=run.lock)

    assert trash.parent == tmp_path / "runs" / TRASH and trash.name.startswith("r-")
    assert (trash / "best.json").read_text() == "{}" and (trash / "trials" / "0000").is_dir()
    assert [path.name for path in run.path.iterdir()] == ["driver.lock"]
    assert run.move_to_trash(keep=run.lock) is None  # nothing left to move


def test_a_run_record_holds_no_password_and_round_trips(tmp_path):
    record = RunRecord(study_name="pg", storage="postgresql://optuna:${CPT_TEST_DB_PASSWORD}@127.0.0.1/optuna")
    run = RunDir(tmp_path)
    run.write_record(record)
    assert run.read_record() == record


def test_check_run_name_accepts_the_names_users_write():
    for name in ("lr_mix", "lr_mix-2026-11", "a.b_c-1", "70B"):
        assert check_run_name(name) == name
