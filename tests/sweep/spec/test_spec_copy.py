"""The run's copy of its spec (RUN/spec.yaml) is refused for an unknown key as the spec is, at any level, by every
reader (the plan's data and W&B, the report), naming the file and the key path; the copy a run writes reads back,
also where its corpora are not on this machine (issue 52: the copy accepted an unknown key)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cli import main
from sweep.files.config_file import SpecError
from sweep.files.rundir import RunDir
from sweep.spec.spec import load_spec, spec_copy_content
from tests.conftest import REPO
from tests.hostile import files_but_the_study
from tests.sweep.promote.promote_runs import write_run

DEFAULT = REPO / "search_spaces" / "lr_mix.yaml"


def copy_of(run_dir: Path, change=None) -> Path:
    run = RunDir(run_dir)
    run.write_spec_copy(load_spec(DEFAULT))
    if change is not None:
        data = yaml.safe_load(run.spec_copy.read_text())
        change(data)
        run.spec_copy.write_text(yaml.safe_dump(data, sort_keys=False))
    return run.spec_copy


UNKNOWN = {
    "top level": (lambda data: data.update(unknown_key=1), "unknown_key"),
    "base": (lambda data: data["base"].update(unknown_key=1), "base.unknown_key"),
    "a corpus": (lambda data: data["data"]["domain"].update(unknown_key=1), "data.domain.unknown_key"),
    "a tagged pruner": (lambda data: data["search"]["pruner"].update(unknown_key=1), "search.pruner.unknown_key"),
    "tracking": (lambda data: data["tracking"].update(unknown_key=1), "tracking.unknown_key"),
}


@pytest.mark.parametrize("edit", UNKNOWN.values(), ids=list(UNKNOWN))
def test_an_unknown_key_in_the_spec_copy_is_refused_naming_it(edit, tmp_path):
    change, key = edit
    path = copy_of(tmp_path, change)
    with pytest.raises(SpecError) as raised:
        spec_copy_content(path)
    assert str(raised.value) == f"{path}: {key} = 1: unknown key; valid keys here: " + str(raised.value).split(
        "valid keys here: "
    )[1]


@pytest.mark.parametrize("argv", [["promote", "plan", "{run}", "--target", "llama3.1-8b"], ["report", "{run}"]])
def test_every_reader_of_the_copy_refuses_it(argv, tmp_path, capsys):
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    path = copy_of(run_dir, UNKNOWN["base"][0])
    before = files_but_the_study(tmp_path)
    assert main([part.format(run=run_dir) for part in argv]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {path}: base.unknown_key = 1: unknown key; valid keys here: model, max_lr")
    assert files_but_the_study(tmp_path) == before


def test_the_copy_a_run_writes_reads_back_even_without_its_corpora(tmp_path):
    path = copy_of(tmp_path)
    assert spec_copy_content(path)["base"]["max_lr"] == load_spec(DEFAULT).base.max_lr
    moved = yaml.safe_load(path.read_text())
    moved["data"]["domain"]["train"] = str(tmp_path / "gone" / "train.jsonl")  # corpora on another machine
    path.write_text(yaml.safe_dump(moved))
    assert spec_copy_content(path)["data"]["domain"]["train"].endswith("gone/train.jsonl")
