"""Where a command may write what a person asked for by path (`--output`): one set of rules for every writing command.

A path on a command line is a person's input like any other: a typo or a pasted path must not replace a file they
keep, write into a device or a pipe, land in the current folder for an empty argument, or overwrite the very records
a report is made from. So an output is a new file (or folder), or an existing one replaced only with --force; never
"" or "."; never a link, a device, a FIFO or another special file; never the input it is made from nor anything
inside a run directory it reads; and its folder must take a new file. All of it is checked before any work starts.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path


class OutputError(ValueError):
    """An --output that no command may write to; the message names the flag, the path and what to name instead."""


def check_output(
    path: Path, *, inputs: Mapping[Path, str], force: bool, folder: bool = False, flag: str = "--output"
) -> None:
    """OutputError unless `path` names a new file (`folder`: a new or empty folder), or with `force` an existing
    regular file (folder) of that name, in a folder where a file can be created, and is none of `inputs` nor inside
    one of them ({path: what it is}: the runs file a law is fitted to, the run directories a report reads)."""
    kind = "folder" if folder else "file"

    def refuse(why: str) -> OutputError:
        return OutputError(f"{flag} {str(path)!r}: {why}; name a new {kind} in a writable folder")

    if str(path) in ("", "."):
        raise refuse(f"no {kind} named")
    try:
        _check(path, inputs, force=force, folder=folder, refuse=refuse)
    except (OSError, RuntimeError) as exc:  # a name too long, a symlink loop above it
        raise refuse(f"cannot be used ({getattr(exc, 'strerror', None) or exc})") from None


def _check(
    path: Path, inputs: Mapping[Path, str], *, force: bool, folder: bool, refuse: Callable[[str], OutputError]
) -> None:
    if path.is_symlink() or (path.exists() and not (path.is_dir() if folder else path.is_file())):
        what, other = ("folder", "a file") if folder else ("regular file", "a folder")
        raise refuse(f"not a {what} ({other}, a link, a device or another special file)")
    for source, what in inputs.items():
        if _same_or_inside(path, source):
            raise refuse(f"{what} itself" if not source.is_dir() or _same(path, source) else f"inside {what}")
    if path.exists() and not force and (not folder or any(path.iterdir())):
        why = "the folder holds files (--force replaces them)" if folder else "the file exists (--force replaces it)"
        raise refuse(why)
    parent = path.parent
    if not parent.is_dir():
        raise refuse(f"its folder {str(parent)!r} does not exist")
    try:  # what is written goes beside its path and is renamed over it: a file there must be creatable
        tempfile.NamedTemporaryFile(dir=parent, prefix=f".{path.name}.", suffix=".probe").close()
    except OSError as exc:
        raise refuse(f"cannot create a file in {str(parent)!r} ({exc.strerror or exc})") from None


def _same(path: Path, source: Path) -> bool:
    return path.exists() and os.path.samefile(path, source)


def _same_or_inside(path: Path, source: Path) -> bool:
    """Whether `path` is `source` (the same file, however named) or lies inside the folder `source`."""
    if not source.exists():
        return False
    if _same(path, source):
        return True
    if not source.is_dir():
        return False
    root, resolved = source.resolve(), path.resolve()
    return root in resolved.parents


def check_own_folder(folder: Path, *, under: Path) -> None:
    """OutputError unless every part of `folder` below `under` (a run directory, or the runs folder) is a real folder
    or not there yet: a default output (a run's report/, runs/compare-a-vs-b/) is never written through a link that
    leads elsewhere, nor made where a file stands."""
    try:
        parts = folder.relative_to(under).parts
    except ValueError:
        raise OutputError(f"{folder} is not under {under}") from None
    at = under
    for part in parts:
        at = at / part
        if at.is_symlink() or (at.exists() and not at.is_dir()):
            raise OutputError(
                f"{at} is not a folder (a link, a file or another special file): the report is written only into "
                f"real folders under {under}; move it aside or name another folder with --output"
            )
