"""A ladder of one model family on GPUs: the shipped Qwen2.5 family spec gives each rung its GPUs per trial, its
batch (in proportion to N, rounded up to a multiple of its GPUs) and trials at once, a rung left to the tool takes
execution.gpus when they hold its trial and the fewest that do otherwise, and a rung whose trial its GPUs cannot hold
is refused when the spec is read, naming the rung's key and the figures. The family's bases are stand-ins: their
real config.json and an empty weights file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from cli import main
from sweep.files.config_file import SpecError
from sweep.ladder.driver import gpu_plan
from sweep.ladder.rungs import rung_specs
from sweep.run.trial_slots import ClusterTooSmall
from sweep.spec.spec import load_spec
from tests.conftest import REPO
from tests.hf_dirs import qwen_family_dirs

SHIPPED = REPO / "search_spaces" / "own_base" / "qwen2.5_family_ladder.yaml"
MODELS = "../../models/"
"""Where the shipped spec expects the bases the user supplies."""
SHARE = 1 / 15
"""The rungs' continued-pretraining share of their pretraining (a Hugging Face rung's is what its own makes it)."""


@pytest.fixture(scope="module")
def family(tmp_path_factory) -> Path:
    return qwen_family_dirs(tmp_path_factory.mktemp("models"))


def shipped(family: Path) -> dict:
    """The shipped spec with the stand-in bases and its data paths absolute."""
    text = SHIPPED.read_text().replace(MODELS, f"{family}/").replace("../../data/", f"{REPO}/data/")
    return yaml.safe_load(text)


def family_spec(tmp_path: Path, family: Path, *, rungs: list[dict] | None = None, **changes) -> Path:
    """The shipped spec (`shipped`) with other `rungs` and `changes` ({section: {key: value}}), under tmp_path."""
    raw = shipped(family)
    if rungs is not None:
        raw["ladder"]["rungs"] = rungs
    for section, values in changes.items():
        raw[section] = {**raw[section], **values}
    path = tmp_path / "family.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def unnamed(family: Path) -> list[dict]:
    """The shipped rungs without their GPUs."""
    return [{key: value for key, value in rung.items() if key != "gpus"} for rung in shipped(family)["ladder"]["rungs"]]


def plan(path: Path, *, max_gpus: int) -> list[tuple[float, int]]:
    """(GPUs per trial, trials at once) of each rung, read back from the ladder's plan."""
    lines = gpu_plan(rung_specs(load_spec(path), SHARE), max_gpus=max_gpus)[1:]
    pattern = r"([\d.]+) GPU\(s\) per trial, (\d+) trial\(s\) at once, ([\d.]+) GB per GPU"
    found = [re.search(pattern, line) for line in lines]
    assert all(match and float(match[3]) <= 80 for match in found), lines
    return [(float(match[1]), int(match[2])) for match in found]


def test_the_shipped_family_ladder_runs_each_rung_on_the_gpus_that_hold_its_trial(family, tmp_path):
    assert plan(family_spec(tmp_path, family), max_gpus=8) == [(1, 8), (1, 8), (2, 4), (4, 2)]
    rungs = rung_specs(load_spec(family_spec(tmp_path, family)), SHARE)
    assert gpu_plan(rungs, max_gpus=8) == [
        "ladder plan (trials at once: at most execution.concurrency, as many as the Ray cluster's 8 GPUs hold):",
        "  rung Qwen2.5-0.5B: 0.49B parameters, 1 GPU(s) per trial, 8 trial(s) at once, 18.2 GB per GPU",
        "  rung Qwen2.5-1.5B: 1.54B parameters, 1 GPU(s) per trial, 8 trial(s) at once, 44.4 GB per GPU",
        "  rung Qwen2.5-3B: 3.09B parameters, 2 GPU(s) per trial, 4 trial(s) at once, 47.4 GB per GPU",
        "  rung Qwen2.5-7B: 7.62B parameters, 4 GPU(s) per trial, 2 trial(s) at once, 61.4 GB per GPU",
    ]
    unknown = gpu_plan(rungs, max_gpus=None)  # a cluster's GPUs are known once a rung's sweep joins it
    assert unknown[-1].endswith("4 GPU(s) per trial, at most 8 trial(s) at once, 61.4 GB per GPU")
    # Every rung runs the same steps, evaluated and checkpointed as often; its batch is in proportion to N (1, 3, 7
    # and 16 sequences), the 3B's rounded up to 8 so that each of its 2 workers trains an equal part.
    assert {(r.spec.proxy.steps, r.spec.proxy.eval_interval, r.spec.execution.checkpoint_interval) for r in rungs} == {
        (400, 100, 100)
    }
    assert [r.spec.proxy.batch_size for r in rungs] == [r.design.batch_size for r in rungs] == [1, 3, 8, 16]


def test_a_rung_larger_than_the_cluster_stops_the_ladder_before_anything_is_written(
    family, tmp_path, monkeypatch, capsys
):
    """Its turn would come after the smaller rungs' hours; the plan is checked before the first rung starts."""
    path = family_spec(tmp_path, family)
    with pytest.raises(ClusterTooSmall, match="^rung Qwen2.5-3B: a trial takes 2 GPU"):
        gpu_plan(rung_specs(load_spec(path), SHARE), max_gpus=1)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CPT_SWEEP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("sweep.run.driver.local_gpus", lambda: 2)  # a machine of two GPUs: a Ray of our own has them

    assert main(["run", str(path)]) == 2

    error = capsys.readouterr().err.strip()
    assert error == (
        "error: rung Qwen2.5-7B: a trial takes 4 GPU(s) and the Ray cluster has 2; run the ladder on a machine or "
        "cluster (--address) with more"
    )
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists()


def test_rungs_left_to_the_tool_take_execution_gpus_when_they_hold_their_trial_else_the_fewest_that_do(
    family, tmp_path
):
    # The fewest GPUs that divide the rung's batch: the 3B's 7 sequences take 7 (naming 2 rounds its batch to 8).
    assert plan(family_spec(tmp_path, family, rungs=unnamed(family)), max_gpus=8) == [(1, 8), (1, 8), (7, 1), (4, 2)]
    two = family_spec(tmp_path, family, rungs=unnamed(family), execution={"gpus": 2})
    assert plan(two, max_gpus=8) == [(2, 4), (2, 4), (2, 4), (4, 2)]
    assert [r.design.batch_size for r in rung_specs(load_spec(two), SHARE)] == [2, 4, 8, 16]  # whole pairs
    without = family_spec(tmp_path, family, rungs=unnamed(family), execution={"activation_checkpointing": False})
    assert plan(without, max_gpus=8) == [(1, 8), (1, 8), (7, 1), (8, 1)]  # 21.0, 61.6, 27.9, 63.1 GB per GPU of 80


def test_a_rung_whose_gpus_cannot_hold_its_trial_is_refused_naming_its_key_and_figures(family, tmp_path):
    rungs = shipped(family)["ladder"]["rungs"]
    rungs[3]["gpus"] = 2
    with pytest.raises(SpecError) as refused:
        load_spec(family_spec(tmp_path, family, rungs=rungs))
    message = str(refused.value)
    assert "ladder.rungs.3.gpus = 2: a trial of rung Qwen2.5-7B (" in message
    assert "per GPU over 2 GPU(s) for a 7.62B-parameter model" in message and "over the 80 GB it has" in message
    assert message.endswith("4 GPUs hold it (61.4 GB each): set ladder.rungs.3.gpus: 4")
    assert len(message.splitlines()) == 1
    with pytest.raises(SpecError, match="ladder.rungs.2.gpus = 2: a rung's GPUs apply to trials on GPUs"):
        load_spec(family_spec(tmp_path, family, execution={"gpus": 0}))
    with pytest.raises(SpecError, match=r"rungs.0.gpus: rung Qwen2.5-0.5B .* not fit GPUs of 10 GB: .*; no number of"):
        load_spec(family_spec(tmp_path, family, rungs=unnamed(family), execution={"gpu_memory_gb": 10}))


def test_a_base_too_large_for_its_gpus_stops_sweep_run_before_anything_is_written(
    family, tmp_path, monkeypatch, capsys
):
    raw = yaml.safe_load(family_spec(tmp_path, family).read_text())
    del raw["ladder"]
    raw["base"] = {"model": str(family / "Qwen2.5-7B"), "max_lr": 3.3e-4}
    path = tmp_path / "seven.yaml"
    path.write_text(yaml.safe_dump(raw))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CPT_SWEEP_CACHE", str(tmp_path / "cache"))

    assert main(["run", str(path)]) == 2

    error = capsys.readouterr().err
    seven = family / "Qwen2.5-7B"
    assert f"{path}: (top level): execution.gpus = 1: a trial of {seven} needs 207.8 GB per GPU over 1 GPU(s)" in error
    assert (
        "weights, gradients and Adam 137.1, gathered weights 0.0, activations 14.9, logits 49.8, reserve 6.0" in error
    )
    assert error.rstrip().endswith("4 GPUs hold it (61.4 GB each): set execution.gpus: 4")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists()


def test_sweep_trial_runs_one_process_and_refuses_a_trial_one_gpu_cannot_hold(family, tmp_path, monkeypatch, capsys):
    raw = yaml.safe_load(family_spec(tmp_path, family).read_text())
    del raw["ladder"]
    raw["base"] = {"model": str(family / "Qwen2.5-7B"), "max_lr": 3.3e-4}
    raw["execution"]["gpus"] = 4
    path = tmp_path / "seven-on-four.yaml"
    path.write_text(yaml.safe_dump(raw))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CPT_SWEEP_CACHE", str(tmp_path / "cache"))

    assert main(["trial", str(path), "--lr-fraction", "0.1", "--mix", "1:1"]) == 2

    error = capsys.readouterr().err
    assert "`sweep trial` runs one process on one GPU, and a trial of" in error and "207.8 GB per GPU" in error
    assert error.rstrip().endswith("over its 80 GB; `sweep run` runs its trials over execution.gpus = 4")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists()
