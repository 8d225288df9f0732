"""A table of runs as a CSV file: a team's earlier runs, or any rows a law is to be fitted to without training.

The file is untrusted input: bounded in size and rows, every column named and typed, and a bad row refused with
its file, line and column (LawInputError, exit 2 at the command line).

    rung,trial,seed,parameters,pretrain_tokens,tokens,lr_fraction,lr_mean,mix,general_loss,domain_loss,\
    base_general_loss,base_domain_loss
    m,0,0,738432,2457600,40960,0.1,0.97,4:1,3.4121,4.2011,3.4011,4.3302

(the header is one line in the file)

One row per evaluation (docs/ladder.md, "Runs as a CSV"); `mix` is general:domain as in a spec.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from sweep.law.table import LawInputError, Observation, ObservationTable
from train_entry.config import shown
from train_entry.mix import MixRatio
from train_entry.trial_config import MIN_LOSS

COLUMNS = (
    "rung", "trial", "seed", "parameters", "pretrain_tokens", "tokens", "lr_fraction", "lr_mean", "mix",
    "general_loss", "domain_loss", "base_general_loss", "base_domain_loss",
)  # fmt: skip
OPTIONAL = {"seed": "0"}
"""Columns a file may leave out, and the value they then take."""
MAX_BYTES = 64 << 20
MAX_LINE_CHARACTERS = 1000
"""The header names at most the 13 columns, about 140 characters, and a row is 13 numbers (about 70 characters, 250
at full float precision): a longer line is not one of a table of runs. Each line is read no further than this (a
one-megabyte header took 98 s to refuse, its columns compared pairwise, and printed a megabyte of names; a 60 MB row
of one quoted field took 7 s)."""
FLOORS = {"tokens": 1.0, "pretrain_tokens": 1.0, "lr_fraction": 1e-6, "lr_mean": 1e-6, **{
    loss: MIN_LOSS for loss in ("general_loss", "domain_loss", "base_general_loss", "base_domain_loss")}}
"""The least each column may hold, above the zero its type already excludes: a token count is at least one token, a
peak LR a millionth of the base's and a schedule's mean a millionth of its peak, a loss MIN_LOSS nats. Below them a
value is a unit error, and 1e-300 in tokens, lr_fraction, lr_mean or pretrain_tokens made the fit's LR area under- or
overflow into a scipy traceback after fitting had started."""
MAX_ROWS = 6_500
"""What `sweep law fit` fits within 2 minutes with its default 200 refits, three forms and their cross-validation:
6,432 rows took 42 s, 1,632 rows 20 s and 432 rows 15 s, but 19,632 rows 380 s (BENCHMARKS.md, measured under
load); a ladder of 8 rungs x 16 trials x 50 evaluations is 6,400. A larger file is refused at its 6,501st row,
before the rest is read."""
MAX_LINES = 2 * MAX_ROWS
"""Lines read at most, blank ones between the rows included: 60 MB of blank lines took 44 s to find no rows in."""


def read_runs_csv(path: Path) -> ObservationTable:
    """The table in `path`; LawInputError naming the file, line and column of the first problem."""
    try:
        if not path.is_file():
            raise LawInputError(f"{path}: not a readable file")
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise LawInputError(f"{path}: {size:,} bytes, more than a table of runs may hold ({MAX_BYTES:,})")
        with path.open(newline="", encoding="utf-8-sig") as file:
            rows = _rows(path, _header(path, file), file)
    except OSError as exc:
        raise LawInputError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise LawInputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise LawInputError(f"{path}: not a CSV file: {exc}") from None
    lines = [line for line, _ in rows]
    try:
        return ObservationTable.of([row for _, row in rows], where=lambda index: f"line {lines[index]}")
    except LawInputError as exc:
        raise LawInputError(f"{path}: {exc}") from None


def _header(path: Path, file: TextIO) -> list[str]:
    """The column names on the file's first line, read no further than MAX_LINE_CHARACTERS."""
    first = _line(path, file, 1)
    if not first.strip():
        raise LawInputError(f"{path}: empty; the first line names the columns: {', '.join(COLUMNS)}")
    columns = [name.strip() for name in next(csv.reader([first]))]
    _check_header(path, columns)
    return columns


def _line(path: Path, file: TextIO, number: int) -> str:
    """Line `number` of `file`, read no further than MAX_LINE_CHARACTERS; LawInputError for a longer one."""
    line = file.readline(MAX_LINE_CHARACTERS + 1)
    if len(line) > MAX_LINE_CHARACTERS:
        what = "a header naming the columns " + ", ".join(COLUMNS) if number == 1 else "a row of a table of runs"
        raise LawInputError(f"{path}: line {number} is longer than {MAX_LINE_CHARACTERS:,} characters, not {what}")
    return line


def _lines(path: Path, file: TextIO) -> Iterator[str]:
    """The lines after the header, each bounded (_line), refused past MAX_LINES."""
    for number in range(2, MAX_LINES + 2):
        line = _line(path, file, number)
        if not line:
            return
        yield line
    if file.read(1):
        raise LawInputError(
            f"{path}: more than {MAX_LINES:,} lines, more than a table of at most {MAX_ROWS:,} rows holds (blank lines "
            "included)"
        )


def _rows(path: Path, columns: list[str], file: TextIO) -> list[tuple[int, Observation]]:
    reader = csv.reader(_lines(path, file))
    rows = []
    for record in reader:
        line = reader.line_num + 1  # the header was line 1
        if not any(field.strip() for field in record):
            continue
        if len(rows) >= MAX_ROWS:
            raise LawInputError(
                f"{path}: more than {MAX_ROWS:,} rows, more than the law is fitted to within 2 minutes; fit a sample "
                "of the trials, or fewer evaluations per trial"
            )
        if len(record) != len(columns):
            raise LawInputError(f"{path}: line {line}: {len(record)} fields, but the header names {len(columns)}")
        rows.append((line, _observation(path, line, dict(zip(columns, (field.strip() for field in record))))))
    return rows


def _check_header(path: Path, columns: list[str]) -> None:
    unknown = [name for name in columns if name not in COLUMNS]
    missing = [name for name in COLUMNS if name not in columns and name not in OPTIONAL]
    repeated = sorted({name for name in columns if columns.count(name) > 1})
    problems = []
    if unknown:
        problems.append(f"unknown column(s) {', '.join(shown(name, 40) for name in unknown)}")
    if missing:
        problems.append(f"missing column(s) {', '.join(map(repr, missing))}")
    if repeated:
        problems.append(f"repeated column(s) {', '.join(map(repr, repeated))}")
    if problems:
        raise LawInputError(f"{path}: line 1: {'; '.join(problems)}; the columns are {', '.join(COLUMNS)}")


def _observation(path: Path, line: int, fields: dict[str, str]) -> Observation:
    values: dict[str, Any] = {**OPTIONAL, **fields}
    for column, floor in FLOORS.items():
        try:
            below = 0 < float(values[column]) < floor
        except ValueError:
            continue  # not a number (or, as zero or less, out of its type's range): the model below names it
        if below:
            raise LawInputError(
                f"{path}: line {line}, column {column!r}: {shown(fields[column])} is below {floor:g}, the least it may "
                "be (a unit error?)"
            )
    mix = values.pop("mix")
    try:
        values["domain_share"] = MixRatio.parse(mix).domain_share
    except ValueError as exc:
        raise LawInputError(f"{path}: line {line}, column 'mix': {exc}") from None
    try:
        return Observation.model_validate(values)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        if not error["loc"]:  # a check across columns (a loss against its base's) names them itself
            raise LawInputError(f"{path}: line {line}: {error['msg'].removeprefix('Value error, ')}") from None
        column = str(error["loc"][0])
        raise LawInputError(
            f"{path}: line {line}, column {column!r}: {error['msg']} (got {shown(fields.get(column, ''))})"
        ) from None
