"""Files a run directory holds: written whole or not at all, read back as untrusted typed data.

A reader (a browser reloading a report, `sweep status` during a run) never sees half a file, and a
process killed mid-write leaves the previous version in place: the data goes to a hidden sibling
that is then renamed over the target, and a rename within one directory is atomic on POSIX.

A run directory is shared, copied and received from colleagues, so everything read back from it
goes through a pydantic model with a size bound: a corrupt file is an error naming it, never a
traceback and never a value trusted because it sat beside our own files. A file cpt-sweep writes carries its
format version (sweep/files/compat.py), checked before anything else is read from it.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from sweep.files.compat import FileFormat, FormatError
from sweep.files.storage_url import quoted

Model = TypeVar("Model", bound=BaseModel)

MAX_RECORD_BYTES = 16 << 20
"""16 MiB: the largest file a run writes (best.json of a 10,000-trial sweep) is well under it."""


class CorruptFile(ValueError):
    """A file in a run directory that is not what cpt-sweep wrote there; the message names it."""


def write_whole(path: Path, data: str | bytes) -> None:
    """`data` into a new hidden sibling renamed over `path`. The sibling is made afresh, never opened through a link a
    copied run directory may hold in its place (which would write wherever the link points); the rename replaces a
    link at `path` itself rather than following it."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)  # a link or a killed writer's leftover: removed, not followed
    descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data.encode("utf-8") if isinstance(data, str) else data)
    os.replace(tmp, path)


def write_model(path: Path, value: BaseModel, fmt: FileFormat) -> None:
    """`value` with its format's version and writer first, written whole."""
    write_whole(path, fmt.dumps(value))


def read_model(
    path: Path,
    model: type[Model],
    *,
    fmt: FileFormat | None,
    what: str | None = None,
    max_bytes: int = MAX_RECORD_BYTES,
) -> Model:
    """`path` validated as `model`; CorruptFile naming the file, what it should be and the first problem.

    `fmt` is the format cpt-sweep wrote it in, its version checked first; None for a file another tool wrote
    (a Hugging Face config.json), which then needs `what`.
    """
    what = what or (fmt.what if fmt is not None else "file")
    try:
        if not path.is_file():  # a FIFO would block the read; a folder is not a record
            raise CorruptFile(f"{path}: not a regular file, so not a {what} cpt-sweep wrote")
        size = path.stat().st_size
        if size > max_bytes:
            raise CorruptFile(f"{path}: {size:,} bytes, more than a {what} ever holds ({max_bytes:,})")
        text = path.read_bytes()
        return model.model_validate_json(text) if fmt is None else fmt.loads(path, text, model)
    except FormatError as exc:
        raise CorruptFile(str(exc)) from None
    except OSError as exc:
        raise CorruptFile(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    except ValidationError as exc:
        raise _invalid(str(path), what, exc, text) from None


def read_stored(place: str, data: Any, model: type[Model], *, fmt: FileFormat) -> Model:
    """A record kept in another tool's store (a user attr of an Optuna trial) validated as `model`, strictly (a
    number stored as a string is refused), once its version is checked; CorruptFile naming `place`, the key and the
    value otherwise."""
    try:
        text = json.dumps(fmt.unstamped(place, data)).encode()
        return model.model_validate_json(text, strict=True)
    except FormatError as exc:
        raise CorruptFile(str(exc)) from None
    except ValidationError as exc:
        raise _invalid(place, fmt.what, exc, text) from None


def _invalid(place: str, what: str, exc: ValidationError, text: bytes) -> CorruptFile:
    where, error = _named(exc, text)
    return CorruptFile(
        f"{place} is not a {what} cpt-sweep wrote: {where or '(top level)'}: {error['msg']}"
        + (f" (got {quoted(error['input'])})" if "input" in error and error["type"] != "json_invalid" else "")
    )


def _named(exc: ValidationError, text: bytes) -> tuple[str, dict[str, Any]]:
    """The error to show and the key it names, as a path of the file's own keys.

    pydantic reports a value refused by a union once per member, its location naming the member
    (`space.lr_fraction.function-after[_ordered(), LRFractionRange]`, `search.pruner.none.unknown_key`): the error
    shown is the one whose location goes deepest into the file, and its location keeps only the file's keys."""
    errors = exc.errors(include_url=False)
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    named = [_in_file(error["loc"], data) for error in errors]
    best = max(range(len(errors)), key=lambda k: (len(named[k]), -k))
    # A key is shown as the file spells it unless it holds a character a terminal would act on (a line break, \x1e).
    parts = (str(part) if str(part).isprintable() else ascii(str(part)) for part in named[best])
    return ".".join(parts), errors[best]


def _in_file(loc: tuple[int | str, ...], data: Any) -> list[int | str]:
    """The parts of `loc` that are keys or indices of the file's data, the last one kept even where it is not
    (a missing key); the union members pydantic names in between are left out."""
    found: list[int | str] = []
    at = data
    for k, part in enumerate(loc):
        if (
            isinstance(at, dict)
            and isinstance(part, str)
            and part in at
            or isinstance(at, list)
            and isinstance(part, int)
            and 0 <= part < len(at)
        ):
            found.append(part)
            at = at[part]
        elif k == len(loc) - 1 and not (isinstance(part, str) and ("[" in part or part[:1].isupper())):
            found.append(part)
    return found


def first_difference(stored: BaseModel, expected: BaseModel, *, rel_tol: float = 1e-9) -> tuple[str, Any, Any] | None:
    """Where a record read back differs from what its source gives: (the key path, as the file spells it, the stored
    value, the expected one) of the first difference, numbers equal within `rel_tol`; None when they agree. Both are
    compared as their JSON, field by field, so a field a later format adds is compared as well."""
    return _difference(stored.model_dump(mode="json"), expected.model_dump(mode="json"), (), rel_tol)


def _difference(stored: Any, expected: Any, at: tuple[str, ...], rel_tol: float) -> tuple[str, Any, Any] | None:
    if isinstance(stored, dict) and isinstance(expected, dict):
        for key in [*stored, *(key for key in expected if key not in stored)]:
            found = _difference(stored.get(key), expected.get(key), (*at, str(key)), rel_tol)
            if found is not None:
                return found
        return None
    if isinstance(stored, list) and isinstance(expected, list) and len(stored) == len(expected):
        for index, (one, other) in enumerate(zip(stored, expected)):
            found = _difference(one, other, (*at, str(index)), rel_tol)
            if found is not None:
                return found
        return None
    numbers = all(isinstance(value, int | float) and not isinstance(value, bool) for value in (stored, expected))
    if numbers and (
        math.isclose(stored, expected, rel_tol=rel_tol, abs_tol=1e-12) or math.isnan(stored) and math.isnan(expected)
    ):
        return None
    return None if stored == expected and type(stored) is type(expected) else (".".join(at), stored, expected)
