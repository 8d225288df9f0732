"""Content-addressed cache entries: a directory per key that is either complete or absent.

Trials run in parallel and may be killed at any moment, so an entry is built in a hidden temp
directory beside it and renamed into place; a reader never sees half of one. The temp directory's
name carries its builder's host and pid, so the next build of the entry removes what a killed
builder on the same host left (a cache on a shared file system keeps other hosts' builds alone).
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path


def digest(*parts: str | int | Path) -> str:
    """sha256 (hex) of the parts in order; a Path part stands for its file's bytes."""
    total = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            with part.open("rb") as stream:
                content = hashlib.file_digest(stream, "sha256").digest()
            total.update(b"file" + content)
        else:
            # Length-prefixed, so that ("ab", "c") and ("a", "bc") differ.
            text = str(part).encode()
            total.update(b"text" + len(text).to_bytes(8, "little") + text)
    return total.hexdigest()


def cached_dir(entry: Path, build: Callable[[Path], None]) -> Path:
    """`entry`, built first by `build(directory)` if it does not exist yet.

    A build that raises or is killed leaves no entry (a killed one leaves its hidden temp
    directory until the entry is next built). Of two processes building the same entry at once, the first rename wins and the
    other's copy is discarded: both return the same, complete directory.
    """
    if entry.is_dir():
        return entry
    entry.parent.mkdir(parents=True, exist_ok=True)
    builders = f".{entry.name}.{socket.gethostname()}-"
    _remove_dead_builds(entry.parent, builders)
    scratch = Path(tempfile.mkdtemp(prefix=f"{builders}{os.getpid()}.", suffix=".tmp", dir=entry.parent))
    try:
        build(scratch)
        try:
            scratch.rename(entry)
        except OSError:
            if not entry.is_dir():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return entry


def _remove_dead_builds(parent: Path, builders: str) -> None:
    """Removes this host's temp directories `<builders><pid>.*.tmp` whose process no longer runs."""
    for stale in parent.glob(f"{glob.escape(builders)}*.tmp"):
        pid = stale.name.removeprefix(builders).split(".", 1)[0]
        if pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
