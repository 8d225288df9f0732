"""A task YAML read for a trial: includes merged, data files made absolute and checked local, a task that would
download or run Python refused naming it, and the names in a folder found."""

from __future__ import annotations

import pytest

from train_entry.downstream.tasks import TaskError, read_task, tasks_in


def write(folder, name, text):
    path = folder / name
    path.write_text(text)
    return path


def test_an_included_template_is_merged_under_the_tasks_own_keys_and_its_files_made_absolute(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "q.jsonl").write_text('{"q": "a", "choices": ["x", "y"], "answer": 0}\n')
    write(tmp_path, "_template.yaml", "output_type: multiple_choice\nmetric_list: [{metric: acc}]\ndoc_to_text: '{{q}}'\n")
    task = read_task(write(tmp_path, "t.yaml", (
        "include: _template.yaml\ntask: mine\ndoc_to_text: 'Q: {{q}}'\ndataset_path: json\n"
        "dataset_kwargs: {data_files: {test: data/q.jsonl}}\n"
    )), "acc")  # fmt: skip
    assert task.name == "mine" and task.config["output_type"] == "multiple_choice"
    assert task.config["doc_to_text"] == "Q: {{q}}"  # the task's own key wins over the template's
    assert task.config["dataset_kwargs"]["data_files"] == {"test": [str(tmp_path / "data" / "q.jsonl")]}
    assert "include" not in task.config
    assert tasks_in(tmp_path) == {"mine": tmp_path / "t.yaml"}  # the template has no task name: not listed


def test_a_local_dataset_folder_is_taken_as_it_is(tmp_path):
    (tmp_path / "saved").mkdir()
    task = read_task(write(tmp_path, "t.yaml", "task: f\ndataset_path: saved\nmetric_list: [{metric: acc}]\n"), "acc")
    assert task.config["dataset_path"] == str(tmp_path / "saved")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("task: hub\ndataset_path: cais/mmlu\n", "would download its data (dataset_path 'cais/mmlu'"),
        ("task: none\n", "would download its data (dataset_path None"),
        ("task: nofiles\ndataset_path: json\n", "with no dataset_kwargs.data_files"),
        ("task: py\ndataset_path: json\nprocess_docs: !function u.f\n", "runs Python (!function)"),
        ("group: g\ntask: [a, b]\n", "not an lm-evaluation-harness task"),
        ("[1, 2]\n", "a task YAML is a mapping"),
        ("include: t.yaml\ntask: loop\n", "levels of include (a cycle?)"),
    ],
    ids=["hub", "no-source", "no-files", "python", "group", "list", "include-cycle"],
)
def test_what_cannot_be_scored_locally_is_refused_naming_the_file(tmp_path, text, fragment):
    path = write(tmp_path, "t.yaml", text)
    with pytest.raises(TaskError) as raised:
        read_task(path, "acc")
    assert str(path) in str(raised.value) and fragment in str(raised.value)
