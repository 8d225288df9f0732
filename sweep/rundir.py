"""The layout of a run directory, runs/<name>/, and the record that lets any reader find its study."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from sweep.files import write_json, write_whole
from sweep.spec import SweepSpec
from sweep.study import STUDY_DB, SweepStudy, load_study, shown_url, storage_url

RUNS = Path("runs")
SPEC_COPY = "spec.yaml"
RUN_JSON = "run.json"
TUNE_DIR = "tune"
"""Ray Tune's experiment state and per-trial logs."""
DRIVER_LOG = "driver.log"
LOCK = "driver.lock"


def write_spec_copy(spec: SweepSpec, run_dir: Path) -> None:
    """Writes the spec the run ran, every default filled in and every path absolute.

    A verbatim copy would keep paths relative to the original spec's folder, which mean nothing
    once read from inside the run directory; this one loads with `load_spec` from anywhere.
    """
    write_whole(run_dir / SPEC_COPY, yaml.safe_dump(spec.model_dump(mode="json", exclude_none=True), sort_keys=False))


class NotARunDirectory(FileNotFoundError):
    """A path given as a run directory that holds no sweep (no run.json, or no study behind it)."""


@dataclass(frozen=True)
class RunInfo:
    study_name: str
    storage: str | None
    """The spec's storage URL; None for the default SQLite file inside the run directory, so the
    directory can be moved or copied whole."""

    def url(self, run_dir: Path) -> str:
        return storage_url(self.storage, run_dir)

    def write(self, run_dir: Path) -> None:
        write_json(run_dir / RUN_JSON, {"study_name": self.study_name, "storage": self.storage})

    @classmethod
    def read(cls, run_dir: Path) -> RunInfo:
        path = run_dir / RUN_JSON
        if not path.is_file():
            raise NotARunDirectory(
                f"{run_dir} is not a sweep run directory (no {RUN_JSON}); give a directory made by "
                f"`sweep run`, e.g. {RUNS / 'lr_mix'}"
            )
        record = json.loads(path.read_text())
        return cls(study_name=record["study_name"], storage=record["storage"])


def open_run(run_dir: Path) -> tuple[RunInfo, SweepStudy]:
    """A run's record and its study, for readers such as `sweep status` and `sweep report`.

    Never creates anything: opening a missing SQLite file would make an empty one.
    """
    info = RunInfo.read(run_dir)
    if info.storage is None and not (run_dir / STUDY_DB).is_file():
        raise NotARunDirectory(f"{run_dir} has {RUN_JSON} but no study: {run_dir / STUDY_DB} is missing")
    url = info.url(run_dir)
    try:
        return info, load_study(url=url, name=info.study_name)
    except KeyError:  # no such study, or one without the plan `sweep run` stores
        raise NotARunDirectory(
            f"{run_dir / RUN_JSON} names study {info.study_name!r}, but {shown_url(url)} holds no sweep of that name"
        ) from None
