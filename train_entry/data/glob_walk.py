"""A corpus glob's files, each real file once, over any tree of symlinks.

Python 3.11's recursive glob follows every symlinked directory: one link back to a parent read a 100-document
file 41 times, and two such links made the walk exponential (over 5 minutes with no output). Here `**` walks each
real directory once per place in the pattern, so a loop ends where it closes, and a file reached by several paths
is read once. The syntax is glob's: `*`, `?` and `[...]` within a name, `**` for any depth, names starting with a
dot matched only by a pattern that starts with one.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Iterator
from pathlib import Path

RECURSIVE = "**"


def glob_files(pattern: str) -> list[Path]:
    """The regular files `pattern` matches, sorted, a file reached through several links only at its first path."""
    parts = Path(pattern).parts
    first = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    root = Path(*parts[:first]) if first else Path()
    if RECURSIVE in parts[first:]:
        matches: Iterator[Path] = _walk(root, parts[first:], set())
    else:  # bounded by the pattern's depth: no loop to follow
        matches = (Path(match) for match in glob.glob(pattern))
    files, seen = [], set()
    for path in sorted(set(matches)):
        try:
            info = path.stat()
        except OSError:
            continue
        if path.is_file() and (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            files.append(path)
    return files


def _walk(directory: Path, parts: tuple[str, ...], walked: set[tuple[int, int, int]]) -> Iterator[Path]:
    """Paths under `directory` matching `parts`; `walked` holds (parts left, device, inode) of each directory
    entered for a `**`, so each is entered once there."""
    if not parts:
        yield directory
        return
    head, rest = parts[0], parts[1:]
    if head == RECURSIVE:
        info = _stat(directory)
        if info is None or (len(parts), info.st_dev, info.st_ino) in walked:
            return
        walked.add((len(parts), info.st_dev, info.st_ino))
        yield from _walk(directory, rest, walked)  # `**` matching no directory
        for entry in _entries(directory):
            if entry.name.startswith("."):
                continue
            if _is_dir(entry):
                yield from _walk(directory / entry.name, parts, walked)
            elif not rest:
                yield directory / entry.name
        return
    if not glob.has_magic(head):
        yield from _walk(directory / head, rest, walked)
        return
    for entry in _entries(directory):
        if entry.name.startswith(".") and not head.startswith("."):
            continue
        if fnmatch.fnmatchcase(entry.name, head) and (not rest or _is_dir(entry)):
            yield from _walk(directory / entry.name, rest, walked)


def _entries(directory: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(directory) as entries:
            return list(entries)
    except OSError:  # not a directory, unreadable, or a link that leads nowhere: glob skips it too
        return []


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None
