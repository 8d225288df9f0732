"""The format version every JSON file cpt-sweep writes carries, and its check wherever such a file is read back.

A file is an object whose first keys are `format_version` (an integer) and `written_by` ("cpt-sweep 0.1.0"),
followed by the model's own keys. cpt-sweep is 0.x: a reader accepts the one version this build writes and
refuses any other (no version, a newer one, a value that is not a version) with one line naming the file, the
version found and which cpt-sweep wrote it, the version this build reads, and what to do; nothing converts a file
of an earlier development version and nothing on disk is touched. When a format changes, its version goes up
in the table of formats (sweep/files/compat.py, which lists every file the tool writes) and the files of the
old version are refused, or read through a conversion written there.

This module sits in train_entry, below sweep/, because train_entry reads some of those files itself (a full run's
config, a job's config) and must not import sweep; the versions of the files train_entry reads are here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from train_entry.config import shown

Model = TypeVar("Model", bound=BaseModel)

FORMAT_KEY = "format_version"
WRITER_KEY = "written_by"
try:
    WRITTEN_BY = f"cpt-sweep {version('cpt-sweep')}"
except PackageNotFoundError:  # train_entry copied onto a cluster image without the package's metadata
    WRITTEN_BY = "cpt-sweep (version unknown)"
MAX_WRITER_CHARACTERS = 100
"""How much of a file's written_by an error quotes."""


class FormatError(ValueError):
    """A file whose format version this cpt-sweep does not read; the message names the file and what to do."""


@dataclass(frozen=True)
class FileFormat:
    """One kind of file and the one version of it this build writes and reads."""

    what: str
    """What the file is, for messages: "run record"."""
    version: int
    remedy: str
    """What a user does with a file of another version: "rerun `sweep run SPEC` into a new run directory"."""

    def dumps(self, value: BaseModel) -> str:
        """`value` as this format's JSON text: the version and writer first, then the model's keys."""
        data = json.loads(value.model_dump_json())  # pydantic's own JSON (its datetimes, its non-finite floats)
        return self.dumps_data(data)

    def dumps_data(self, data: dict[str, Any]) -> str:
        """A plain JSON object (a free-form summary) as this format's JSON text."""
        return json.dumps(self.stamped(data), indent=2) + "\n"

    def stamped(self, data: dict[str, Any]) -> dict[str, Any]:
        """`data` with the version and writer first: for a record kept inside another tool's store."""
        if FORMAT_KEY in data or WRITER_KEY in data:
            raise ValueError(f"a {self.what} has no key of its own named {FORMAT_KEY} or {WRITER_KEY}")
        return {FORMAT_KEY: self.version, WRITER_KEY: WRITTEN_BY, **data}

    def unstamped(self, path: Path | str, data: Any) -> dict[str, Any]:
        """The record's keys without the version and writer; FormatError naming `path` (a file, or where another
        tool's store keeps the record) unless it is this version."""
        if not isinstance(data, dict):
            raise FormatError(f"{path} is not a {self.what} cpt-sweep wrote: not an object of keys")
        found = data.get(FORMAT_KEY)
        if type(found) is int and found == self.version:
            return {key: value for key, value in data.items() if key not in (FORMAT_KEY, WRITER_KEY)}
        writer = data.get(WRITER_KEY)
        by = f" by {_writer(writer)}" if writer is not None else ""
        if FORMAT_KEY not in data:
            problem = (
                f"no {FORMAT_KEY} (written{by or ' by an earlier development version of cpt-sweep, or not by it'})"
            )
        elif type(found) is not int:
            problem = f"{FORMAT_KEY} {shown(found)} is not a version (an integer)"
        else:
            problem = f"{self.what} format {found} (written{by or ' by another cpt-sweep'})"
        raise FormatError(
            f"{path}: {problem}; this {WRITTEN_BY} reads {self.what} format {self.version} only: {self.remedy}"
        )

    def read(self, path: Path, model: type[Model]) -> Model:
        """The file at `path` as `model` (see loads); OSError when it cannot be read."""
        return self.loads(path, path.read_bytes(), model)

    def loads(self, path: Path, text: str | bytes, model: type[Model]) -> Model:
        """The file's text validated as `model` once its version is checked; FormatError or pydantic's
        ValidationError (invalid JSON included) otherwise."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return model.model_validate_json(text)  # pydantic's own message for text that is not JSON
        # Validated from JSON text again, not from the dict: strict models take a datetime only as JSON's string.
        return model.model_validate_json(json.dumps(self.unstamped(path, data)))


def _writer(writer: Any) -> str:
    """A file's written_by as a message quotes it: as it is when it is a short printable string, else repr'd."""
    if isinstance(writer, str) and writer.isprintable() and len(writer) <= MAX_WRITER_CHARACTERS:
        return writer
    return shown(writer, MAX_WRITER_CHARACTERS)


# The files train_entry writes or reads; sweep/files/compat.py lists them with the rest.
_NEW_RUN = "run the sweep again with this cpt-sweep into a new run directory"
TRIAL_CONFIG = FileFormat("trial config", 4, _NEW_RUN)
TRIAL_RESULT = FileFormat("trial result", 5, _NEW_RUN)
FULL_RUN = FileFormat("full run config", 2, "make the plan again with this cpt-sweep: `sweep promote plan RUN`")
JOB = FileFormat("job config", 3, "submit the plan again with this cpt-sweep: `sweep promote submit RUN`")
JOB_RESULT = FileFormat("job result", 1, "rehearse again with this cpt-sweep: `sweep promote rehearse RUN`")
CHECKPOINT_PROGRESS = FileFormat("checkpoint progress record", 2, "the trial starts over from step 0")
