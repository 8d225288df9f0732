"""A run directory, runs/<name>/: the one place that names its files, and proves a path lies inside it.

Everything a sweep knows lives there (the spec it ran, the study's record, Ray's state, the trials
table, best.json, the report, promotion plans). A run directory is shared, copied and received
from colleagues, so a name is one plain path component, a path is checked to stay inside the run
before anything is written or removed through it, and `--fresh` moves an old run aside instead of
deleting it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import Field, field_validator

from sweep.files.compat import FORMAT_KEY, RUN_RECORD, SPEC, WRITTEN_BY
from sweep.files.records import CorruptFile, read_model, write_model, write_whole
from sweep.files.storage_url import check_url, resolve
from train_entry.config import StrictConfig, shown
from train_entry.trial_config import RESULT_JSON, TRIAL_CONFIG_JSON

PROMOTION_DIR = "promotion"
"""Promotion plans, one folder per plan id: named here and by `sweep jobs`, which looks in every run."""
RUNS = Path("runs")
"""Where `sweep run` puts run directories, relative to the working directory."""
TRASH = ".trash"
"""Under RUNS: where `sweep run --fresh` moves the run it replaces (runs/.trash/<name>-<UTC time>)."""
RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
"""One path component: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 100."""
Segment = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=200)]
"""An id read from a record that names a folder (a plan's, a job's): one plain path component, never '..', a '/',
markup or a name longer than a file system takes; a reader also checks it equals its folder's name."""


class In:
    """A file or folder of a run (or plan) directory, by its one name: `RunDir(p).best_json` is p / "best.json"."""

    def __init__(self, name: str, doc: str) -> None:
        self.name = name
        self.__doc__ = doc

    def __get__(self, directory: RunDir | PlanDir | None, owner: type) -> Any:
        return self if directory is None else directory.path / self.name


class RunDirError(ValueError):
    """A run name or run directory that cannot be used; the message says the rule."""


class RunLocked(RunDirError):
    """Another `sweep run` holds this run directory."""


class NotARunDirectory(RunDirError):
    """A path given as a run directory that holds no sweep (no run.json, or no study behind it)."""


def check_run_name(name: str, *, origin: str = "--name") -> str:
    if not RUN_NAME.fullmatch(name):
        raise RunDirError(
            f"run name {shown(name)} ({origin}) is not one plain path component: use letters, digits, '.', '_' "
            "and '-', starting with a letter or digit, at most 100 characters (e.g. lr_mix-2026-11)"
        )
    return name


class RunRecord(StrictConfig):
    """run.json: what any reader needs to find the run's study."""

    study_name: str = Field(pattern=rf"^{RUN_NAME.pattern}$")
    """The run's name: it names folders (a comparison report's) and W&B runs, so it obeys the run-name rule."""
    storage: str | None = None
    """The spec's storage URL (passwords as `${NAME}`); None for the default SQLite file inside the run
    directory, so the directory can be moved or copied whole."""

    @field_validator("storage")
    @classmethod
    def _storage(cls, storage: str | None) -> str | None:
        return None if storage is None else check_url(storage)

    def url(self, run: RunDir) -> str:
        """The study's storage URL with its passwords filled in from the environment."""
        if self.storage is None:
            return f"sqlite:///{run.study_db.resolve()}"
        return resolve(self.storage)


@dataclass(frozen=True)
class RunDir:
    """The files of one run; every path it hands out for writing lies inside it (`inside`)."""

    path: Path

    @classmethod
    def named(cls, name: str, *, origin: str = "--name") -> RunDir:
        """runs/<name> for `sweep run`: the name checked, and a symlink in its place refused."""
        path = RUNS / check_run_name(name, origin=origin)
        if path.is_symlink():
            raise RunDirError(f"{path} is a symbolic link; a run directory must be a real folder under {RUNS}/")
        return cls(path)

    # -------------------------------------------------------------------------------- the files

    spec_copy = In("spec.yaml", "The spec the run ran, defaults filled in and paths absolute.")
    run_json = In("run.json", "The run record: the study's name and storage.")
    study_db = In("optuna.db", "The default SQLite file of the Optuna study.")
    driver_log = In("driver.log", "The driver's, Ray's and Optuna's log lines.")
    lock = In("driver.lock", "Held (flock) by the one `sweep run` driving this run.")
    tune = In("tune", "Ray Tune's experiment state and per-trial logs.")
    trials = In("trials", "One folder per trial.")
    trials_parquet = In("trials.parquet", "The trials table.")
    trials_csv = In("trials.csv", "The trials table.")
    best_json = In("best.json", "The optimum, its evidence, the Pareto front and the sweep's cost.")
    report = In("report", "index.html, a PNG per plot and report.md.")
    wandb_dashboard = In("wandb_dashboard.json", "The W&B view's definition (and its URL once published).")
    promotion = In(PROMOTION_DIR, "One folder per promotion plan.")
    ladder_json = In("ladder.json", "A ladder run's matched rungs, their evaluations and the loss law fitted to them.")
    rungs = In("rungs", "A ladder run's rungs, each a run directory of its own.")

    def trial(self, number: int) -> Path:
        """A trial's own directory: its resolved config, result, index caches and W&B files."""
        return self.trials / f"{number:04d}"

    def trial_config(self, number: int) -> Path:
        return self.trial(number) / TRIAL_CONFIG_JSON

    def trial_result(self, number: int) -> Path:
        return self.trial(number) / RESULT_JSON

    def rung(self, name: str) -> RunDir:
        """A ladder rung's own run directory, runs/<ladder>/rungs/<name>/."""
        return RunDir(self.rungs / name)

    @property
    def is_ladder(self) -> bool:
        return self.ladder_json.is_file()

    def plan(self, plan_id: str) -> PlanDir:
        """A promotion plan's directory: plan.json, its run config, summary, Megatron-LM arguments, jobs."""
        return PlanDir(self.promotion / plan_id)

    def plans(self) -> list[PlanDir]:
        """Every promotion plan of the run, by id; RunDirError for a plan folder that is a link leading out of the
        run (what a reader finds there is not this run's, and a watch would write beside it)."""
        return [PlanDir(self.inside(path)) for path in sorted(self.promotion.glob("*")) if path.is_dir()]

    # ----------------------------------------------------------------------------- reading, writing

    def inside(self, path: Path) -> Path:
        """`path`, once proven to lie inside this run directory with every symlink followed;
        RunDirError before anything is touched otherwise."""
        root = self.path.resolve()
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise RunDirError(f"{path}: cannot resolve it inside the run directory {self.path}: {exc}") from None
        if resolved != root and root not in resolved.parents:
            raise RunDirError(
                f"{path} leads outside the run directory {self.path} (to {resolved}); refusing to touch it"
            )
        return path

    def read_record(self) -> RunRecord:
        if not self.run_json.exists():
            raise NotARunDirectory(
                f"{self.path} is not a sweep run directory (no {self.run_json.name}); give a directory made by "
                f"`sweep run`, e.g. {RUNS / 'lr_mix'}"
            )
        try:
            return read_model(self.run_json, RunRecord, fmt=RUN_RECORD, max_bytes=64 << 10)
        except CorruptFile as exc:
            raise NotARunDirectory(str(exc)) from None

    def write_record(self, record: RunRecord) -> None:
        write_model(self.inside(self.run_json), record, RUN_RECORD)

    def write_spec_copy(self, spec: StrictConfig) -> None:
        """Writes the spec the run ran (a SweepSpec: typed as any config, since the spec assembles configs from the
        packages above this one), every default filled in and every path absolute.

        A verbatim copy would keep paths relative to the original spec's folder, which mean nothing
        once read from inside the run directory; this one loads with `load_spec` from anywhere. It carries
        the spec's format version as its first key and the cpt-sweep that wrote it in a comment.
        """
        content = {FORMAT_KEY: SPEC.version, **spec.model_dump(mode="json", exclude_none=True)}
        text = f"# written by {WRITTEN_BY}\n" + yaml.safe_dump(content, sort_keys=False)
        write_whole(self.inside(self.spec_copy), text)

    def move_to_trash(self, *, keep: Path) -> Path | None:
        """--fresh: moves everything in the run directory but `keep` (its lock) to
        runs/.trash/<name>-<UTC time>/, which it returns; None when there was nothing to move."""
        entries = [entry for entry in self.path.iterdir() if entry != keep]
        if not entries:
            return None
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        trash = self.path.parent / TRASH / f"{self.path.name}-{stamp}"
        trash.mkdir(parents=True)
        for entry in entries:
            entry.rename(trash / entry.name)  # the same file system: nothing is copied or deleted
        return trash


@dataclass(frozen=True)
class PlanDir:
    """runs/<name>/promotion/<plan id>/: one plan of the run's optimum, and the jobs submitted from it."""

    path: Path

    @property
    def id(self) -> str:
        return self.path.name

    plan_json = In("plan.json", "The whole plan; `Plan.read` loads it.")
    full_run_json = In(
        "full_run.json", "The plan's FullRunConfig alone: what `python -m train_entry.megatron --config` runs."
    )
    summary_md = In("summary.md", "The plan's tables as printed.")
    megatron_args = In("pretrain_gpt_args.txt", "The run as Megatron-LM pretrain_gpt.py arguments, one flag per line.")
    launch_script = In("pretrain_gpt.sh", "A torchrun launch of Megatron-LM's pretrain_gpt.py with those arguments.")
    jobs_json = In("jobs.json", "Every submission of the plan: id, cluster address, time; nothing secret.")
    rehearsals = In("rehearsal", "One folder per rehearsal (its UTC time): the job's log, Ray Train's results.")

    def job(self, submission_id: str) -> Path:
        """The folder uploaded as a submission's working_dir: its job.json and nothing else."""
        return self.path / "jobs" / submission_id
