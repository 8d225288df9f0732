"""evaluation.downstream and objective.downstream_budget in a spec: local tasks by file or by name are taken; a task
that would download, runs Python, lacks its data or its metric, a budget on a task not scored, and a missing eval
extra are each one clear line and exit code 2, before any compute and with nothing written."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from cli import main
from sweep.files.config_file import SpecError
from sweep.spec.spec import load_spec
from tests.conftest import REPO

TASK_DIR = REPO / "data" / "tasks" / "general_mc"
NAME = "cpt_sweep_general_mc"


@pytest.fixture
def tasks(tmp_path):
    """A copy of the bundled task's folder, to write broken siblings into."""
    folder = tmp_path / "tasks"
    shutil.copytree(TASK_DIR, folder)
    return folder


def downstream(tasks_, **rest):
    return {"downstream": {"tasks": tasks_, **rest}}


def test_a_task_by_file_or_by_name_in_include_path_is_read_with_its_data_made_absolute(write_tiny_spec, tasks):
    by_file = load_spec(write_tiny_spec(evaluation=downstream([{"task": str(tasks / "general_mc.yaml")}])))
    by_name = load_spec(write_tiny_spec(evaluation=downstream([{"task": NAME}], include_path=str(tasks))))
    for spec in (by_file, by_name):
        (task,) = spec.evaluation.downstream.plan().tasks
        assert (task.name, task.metric) == (NAME, "acc")
        assert task.config["dataset_kwargs"]["data_files"] == {"test": [str(tasks / "test.jsonl")]}


def test_the_shipped_downstream_spec_budgets_its_bundled_task():
    spec = load_spec(REPO / "search_spaces" / "lr_mix_downstream.yaml")
    assert spec.evaluation.downstream.task_names == [NAME]
    assert spec.plan().downstream_budget == {NAME: 0.15}
    assert load_spec(REPO / "search_spaces" / "lr_mix.yaml").evaluation.downstream is None  # the default: losses only


HUB_TASK = "task: hub_task\ndataset_path: Rowan/hellaswag\noutput_type: multiple_choice\n"
PYTHON_TASK = "task: py_task\ndataset_path: json\nprocess_docs: !function utils.process_docs\n"
NO_FILE_TASK = "task: lost\ndataset_path: json\ndataset_kwargs: {data_files: {test: gone.jsonl}}\n"
REMOTE_TASK = "task: far\ndataset_path: json\ndataset_kwargs: {data_files: {test: 'https://example.org/t.jsonl'}}\n"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (HUB_TASK, "task 'hub_task' would download its data (dataset_path 'Rowan/hellaswag'"),
        (PYTHON_TASK, "a task that runs Python (!function) is not taken"),
        (NO_FILE_TASK, "task 'lost''s data file"),
        (REMOTE_TASK, "task 'far' names a remote data file"),
    ],
    ids=["downloads", "python", "missing-data", "remote-data"],
)
def test_a_task_that_is_not_local_and_declarative_is_refused_naming_it(text, fragment, write_tiny_spec, tasks, capsys):
    bad = tasks / "bad.yaml"
    bad.write_text(text)
    path = write_tiny_spec(evaluation=downstream([{"task": str(bad)}]))
    message = str(pytest.raises(SpecError, load_spec, path).value)
    assert "evaluation.downstream" in message and str(bad) in message and fragment in message
    assert main(["run", str(path), "--name", "refused"]) == 2
    assert fragment in capsys.readouterr().err


def test_a_built_in_task_name_or_a_metric_the_task_lacks_is_refused(write_tiny_spec, tasks):
    hub = write_tiny_spec(evaluation=downstream([{"task": "hellaswag"}], include_path=str(tasks)))
    with pytest.raises(SpecError, match=rf"(?s)task 'hellaswag' is not a local task.*found: \['{NAME}'\]"):
        load_spec(hub)
    metric = write_tiny_spec(evaluation=downstream([{"task": NAME, "metric": "f1"}], include_path=str(tasks)))
    with pytest.raises(SpecError, match=r"reports \['acc', 'acc_norm'\], not metric 'f1'"):
        load_spec(metric)


def test_a_downstream_budget_names_a_scored_task_and_needs_the_base_scored(write_tiny_spec, tasks):
    task = [{"task": str(tasks / "general_mc.yaml")}]
    unknown = write_tiny_spec(evaluation=downstream(task), objective={"downstream_budget": {"mmlu": 0.01}})
    with pytest.raises(SpecError, match=r"downstream_budget names mmlu, not a task of evaluation.downstream"):
        load_spec(unknown)
    alone = write_tiny_spec(objective={"downstream_budget": {NAME: 0.01}})
    with pytest.raises(SpecError, match=r"its tasks: none"):
        load_spec(alone)
    unscored = write_tiny_spec(evaluation=downstream(task, base=False), objective={"downstream_budget": {NAME: 0.01}})
    with pytest.raises(SpecError, match=r"set evaluation.downstream.base true"):
        load_spec(unscored)
    negative = write_tiny_spec(evaluation=downstream(task), objective={"downstream_budget": {NAME: -0.01}})
    with pytest.raises(SpecError, match=rf"objective.downstream_budget.{NAME}"):
        load_spec(negative)


def test_without_the_eval_extra_a_downstream_sweep_stops_with_the_line_that_installs_it(
    write_tiny_spec, tasks, monkeypatch, tmp_path, capsys
):
    path = write_tiny_spec(evaluation=downstream([{"task": str(tasks / "general_mc.yaml")}]))
    found = importlib.util.find_spec
    # The package is installed here (the test setup installs the extra); the machine without it is simulated.
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "lm_eval" else found(name, *a))
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(path), "--name", "no-harness"]) == 2
    err = capsys.readouterr().err
    assert "needs lm-evaluation-harness" in err and "pip install -e '.[eval]'" in err and str(path) in err
    assert not (tmp_path / "runs").exists()


def test_without_the_eval_extra_a_single_trial_stops_before_it_prepares_anything(
    write_tiny_spec, tasks, monkeypatch, tmp_path, capsys
):
    path = write_tiny_spec(evaluation=downstream([{"task": str(tasks / "general_mc.yaml")}]))
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "lm_eval" else found(name, *a))
    monkeypatch.setenv("CPT_SWEEP_CACHE", str(tmp_path / "cache"))
    assert main(["trial", str(path), "--lr-fraction", "0.1", "--mix", "1:1"]) == 2
    assert "pip install -e '.[eval]'" in capsys.readouterr().err
    assert not (tmp_path / "cache").exists()  # nothing sampled, built or measured
