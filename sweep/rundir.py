"""The layout of a run directory, runs/<name>/, and the record that lets any reader find its study."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sweep.study import storage_url

RUNS = Path("runs")
SPEC_COPY = "spec.yaml"
RUN_JSON = "run.json"
TUNE_DIR = "tune"
"""Ray Tune's experiment state and per-trial logs."""
DRIVER_LOG = "driver.log"
LOCK = "driver.lock"


@dataclass(frozen=True)
class RunInfo:
    study_name: str
    storage: str | None
    """The spec's storage URL; None for the default SQLite file inside the run directory, so the
    directory can be moved or copied whole."""

    def url(self, run_dir: Path) -> str:
        return storage_url(self.storage, run_dir)

    def write(self, run_dir: Path) -> None:
        record = {"study_name": self.study_name, "storage": self.storage}
        (run_dir / RUN_JSON).write_text(json.dumps(record, indent=2) + "\n")

    @classmethod
    def read(cls, run_dir: Path) -> RunInfo:
        path = run_dir / RUN_JSON
        if not path.is_file():
            raise FileNotFoundError(f"{run_dir} is not a sweep run directory (no {RUN_JSON})")
        record = json.loads(path.read_text())
        return cls(study_name=record["study_name"], storage=record["storage"])
