"""The spec's `evaluation.downstream` section: benchmark tasks every completed trial (and the base, once) is scored on
with lm-evaluation-harness, from local task files only, and the metric that counts per task. Checked when the spec
is read: each task's YAML is found and read, its data files exist, and a task that would download is refused, naming
it; whether lm-evaluation-harness itself is installed is checked before a sweep's compute starts
(train_entry.downstream.harness.require_harness), so that a run's record reads on a machine without it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from sweep.files.config_file import resolve_path
from train_entry.config import StrictConfig
from train_entry.downstream.tasks import DownstreamPlan, LocalTask, TaskError, read_task, tasks_in

YAML_SUFFIXES = (".yaml", ".yml")


def _folder(path: Path, info: ValidationInfo) -> Path:
    path = resolve_path(path, info)
    if not path.is_dir():
        raise ValueError(f"include_path {path} is not a folder of task YAML files")
    return path


class DownstreamTask(StrictConfig):
    """One lm-evaluation-harness task and the metric that counts."""

    task: str = Field(min_length=1, max_length=1000)
    """A task YAML file (a path ending .yaml, relative to the spec's folder), or the name of a task in one of
    include_path's YAML files. lm-eval's own built-in tasks read their data from the Hugging Face Hub, which a sweep
    never does: copy the task's YAML and point it at local files."""
    metric: str = Field("acc", min_length=1, max_length=100)
    """The metric of the task's metric_list whose score and drop count (acc: the share answered right)."""

    @property
    def is_file(self) -> bool:
        return self.task.endswith(YAML_SUFFIXES)


class DownstreamConfig(StrictConfig):
    """Benchmark tasks scored at the end of each completed trial (docs/downstream.md)."""

    include_path: Annotated[Path | None, AfterValidator(lambda path, info: path and _folder(path, info))] = None
    """A folder of task YAML files that `tasks` may name by task name."""
    tasks: list[DownstreamTask] = Field(min_length=1, max_length=64)
    limit: int | None = Field(None, ge=1, le=1_000_000)
    """Examples scored per task, the first ones; default all. A score over n examples has a standard error of about
    sqrt(p (1 - p) / n): 0.5 / sqrt(n) at worst, 5 points at n = 100, 1.6 at 1 000."""
    base: bool = True
    """Score the base once, as the reference every trial's drop is measured against; false: scores only, no drop
    (objective.downstream_budget then cannot be set)."""
    batch_size: int = Field(8, ge=1, le=4096)
    """Sequences per forward pass of the harness's log-likelihood requests."""

    @field_validator("tasks", mode="after")
    @classmethod
    def _tasks_read(cls, tasks: list[DownstreamTask], info: ValidationInfo) -> list[DownstreamTask]:
        include = info.data.get("include_path")
        return [_located(task, include, info) for task in tasks]

    @model_validator(mode="after")
    def _checked(self) -> DownstreamConfig:
        names = [task.name for task in self.local_tasks()]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"tasks name {', '.join(twice)} more than once; list each task once")
        return self

    def local_tasks(self) -> list[LocalTask]:
        """Each task read from its file, its data files absolute (ValueError naming the file when one cannot be)."""
        known = tasks_in(self.include_path) if self.include_path is not None else {}
        tasks = []
        for task in self.tasks:
            try:
                tasks.append(read_task(Path(task.task) if task.is_file else known[task.task], task.metric))
            except TaskError as exc:
                raise ValueError(str(exc)) from None
        return tasks

    def plan(self) -> DownstreamPlan:
        """What each trial is given."""
        return DownstreamPlan(tasks=self.local_tasks(), limit=self.limit, batch_size=self.batch_size)

    @property
    def task_names(self) -> list[str]:
        return [task.name for task in self.local_tasks()]


def _located(task: DownstreamTask, include: Path | None, info: ValidationInfo) -> DownstreamTask:
    """The task with its YAML file's path resolved against the spec's folder, or its name found in include_path."""
    if task.is_file:
        path = resolve_path(Path(task.task), info)
        if not path.is_file():
            raise ValueError(f"task file {path} does not exist")
        return task.model_copy(update={"task": str(path)})
    known = tasks_in(include) if include is not None else {}
    if task.task not in known:
        where = f"no YAML file in include_path {include} defines it" if include else "no include_path is set"
        raise ValueError(
            f"task {task.task!r} is not a local task ({where}); name a task YAML file (a path ending .yaml) or a task "
            f"in include_path{f' (found: {sorted(known)})' if known else ''}. lm-eval's built-in tasks download their "
            "data from the Hugging Face Hub, which a sweep never does: copy the task's YAML and point it at local files"
        )
    return task


class EvaluationConfig(StrictConfig):
    """What a trial is scored on beside its validation losses."""

    downstream: DownstreamConfig | None = None
    """lm-evaluation-harness tasks from local files (the `eval` extra); None: losses only."""
