"""A downstream task as a trial is given it: its lm-evaluation-harness config read from a local YAML file, its data
files resolved to absolute paths and checked to be local, so that the trial is a function of its config and nothing
is downloaded. lm-evaluation-harness is not imported here: a spec is checked where the `eval` extra is missing too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import Field

from train_entry.config import StrictConfig

LOCAL_LOADERS = frozenset({"json", "csv", "parquet", "text", "arrow"})
"""Hugging Face `datasets` builders that read the files named in `data_files` and nothing else; any other
dataset_path names a dataset on the Hugging Face Hub (a download) unless it is a local folder."""
MAX_TASK_BYTES = 1 << 20
"""A task YAML is a page of settings; a larger file is not one."""
MAX_INCLUDES = 8
"""Nested `include:` levels followed at most (a cycle would otherwise never end)."""


class TaskError(ValueError):
    """A task that cannot be evaluated from local files; the message names the task and what would be valid."""


class LocalTask(StrictConfig):
    """One task as lm-evaluation-harness takes it inline (a config dict), its data files absolute and local."""

    name: str = Field(min_length=1, max_length=200)
    """The task's name (its YAML's `task`): the prefix of its columns (`<name>_score`, `<name>_drop`)."""
    metric: str = Field(min_length=1, max_length=100)
    """The metric that counts (one of the task's metric_list, e.g. acc)."""
    source: str
    """The YAML file it was read from."""
    config: dict[str, Any]
    """The task's config, data_files made absolute."""


class DownstreamPlan(StrictConfig):
    """What a trial (or the base) is scored on after training: the tasks, and how many examples of each."""

    tasks: list[LocalTask] = Field(min_length=1, max_length=64)
    limit: int | None = Field(None, ge=1)
    """Examples per task, the first ones; None: all."""
    batch_size: int = Field(8, ge=1, le=4096)
    """Sequences per forward pass of the harness's log-likelihood requests."""


def read_task(path: Path, metric: str) -> LocalTask:
    """The task in the YAML file `path`, checked to read only local files and to report `metric`; TaskError naming the
    file otherwise."""
    config = _load(path, depth=0)
    name = config.get("task")
    if not isinstance(name, str) or not name:
        raise TaskError(f"{path}: not an lm-evaluation-harness task (no `task:` name); a group or tag is not taken")
    config["dataset_kwargs"] = _local_data(path, name, config)
    metrics = [entry.get("metric") for entry in config.get("metric_list") or [] if isinstance(entry, dict)]
    if metric not in metrics:
        raise TaskError(f"{path}: task {name!r} reports {metrics or 'no metric_list'}, not metric {metric!r}")
    return LocalTask(name=name, metric=metric, source=str(path), config=config)


def tasks_in(folder: Path) -> dict[str, Path]:
    """The task names of the YAML files under `folder` (recursively), each with its file."""
    found: dict[str, Path] = {}
    for path in sorted([*folder.rglob("*.yaml"), *folder.rglob("*.yml")]):
        try:
            name = _load(path, depth=0).get("task")
        except TaskError:
            continue  # not a task file of ours to name (a template, a group): only named tasks are looked up
        if isinstance(name, str):
            found.setdefault(name, path)
    return found


def _load(path: Path, *, depth: int) -> dict[str, Any]:
    """The YAML mapping in `path` with its `include:` files merged under it (the file's own keys win)."""
    if depth > MAX_INCLUDES:
        raise TaskError(f"{path}: more than {MAX_INCLUDES} levels of include (a cycle?)")
    try:
        if path.stat().st_size > MAX_TASK_BYTES:
            raise TaskError(f"{path}: over {MAX_TASK_BYTES} bytes, not a task YAML")
        content = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.constructor.ConstructorError as exc:
        raise TaskError(
            f"{path}: {exc.problem} ({exc.problem_mark}); a task that runs Python (!function) is not taken: cpt-sweep "
            "runs only declarative tasks (Jinja doc_to_text / doc_to_choice / doc_to_target)"
        ) from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise TaskError(f"{path}: cannot read it as a task YAML: {exc}") from None
    if not isinstance(content, dict):
        raise TaskError(f"{path}: a task YAML is a mapping of settings, got {type(content).__name__}")
    includes = content.pop("include", [])
    merged: dict[str, Any] = {}
    for include in includes if isinstance(includes, list) else [includes]:
        merged.update(_load(path.parent / str(include), depth=depth + 1))
    return {**merged, **content}


def _local_data(path: Path, name: str, config: dict[str, Any]) -> dict[str, Any]:
    """The task's dataset_kwargs with data_files absolute; TaskError when its data would be downloaded or a file is
    missing."""
    source = config.get("dataset_path")
    kwargs = dict(config.get("dataset_kwargs") or {})
    if isinstance(source, str) and source not in LOCAL_LOADERS:
        folder = (path.parent / source).resolve()
        if folder.is_dir():
            config["dataset_path"] = str(folder)
            return kwargs
    if source not in LOCAL_LOADERS:
        raise TaskError(
            f"{path}: task {name!r} would download its data (dataset_path {source!r} is neither a local folder nor "
            f"one of the local file loaders {sorted(LOCAL_LOADERS)}); cpt-sweep downloads nothing at run time: save "
            "the data as files and write dataset_path: json with dataset_kwargs.data_files naming them"
        )
    files = kwargs.get("data_files")
    if not files:
        raise TaskError(f"{path}: task {name!r} reads dataset_path {source!r} with no dataset_kwargs.data_files")
    splits = files if isinstance(files, dict) else {"train": files}
    resolved: dict[str, list[str]] = {}
    for split, names in splits.items():
        resolved[split] = []
        for entry in names if isinstance(names, list) else [names]:
            if "://" in str(entry):
                raise TaskError(f"{path}: task {name!r} names a remote data file {entry!r}; name a local file")
            local = (path.parent / str(entry)).resolve()
            if not local.is_file():
                raise TaskError(f"{path}: task {name!r}'s data file {local} does not exist")
            resolved[split].append(str(local))
    return {**kwargs, "data_files": resolved if isinstance(files, dict) else resolved["train"]}
