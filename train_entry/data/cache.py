"""Content-addressed cache entries: a directory per key that is either complete or absent.

Trials run in parallel and may be killed at any moment, so an entry is built in a hidden temp
directory beside it and renamed into place; a reader never sees half of one.
"""

from __future__ import annotations

import hashlib
import shutil
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
    directory). Of two processes building the same entry at once, the first rename wins and the
    other's copy is discarded: both return the same, complete directory.
    """
    if entry.is_dir():
        return entry
    entry.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", suffix=".tmp", dir=entry.parent))
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
