"""A corpus's identity for cache keys, read in milliseconds whatever its size: never its every byte.

The key covers each file's size and modification time (nanoseconds), the first and last block of each file, and
blocks at evenly spaced offsets across the corpus (its files one after another). Appending, truncating, rewriting
or touching a file changes its size or mtime; an edit that keeps both (a tool that restores the mtime) is seen
only where it touches a hashed block.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from train_entry.data.corpus import CorpusError

SPREAD_BLOCKS = 64
"""Blocks hashed at evenly spaced offsets across the whole corpus."""
BLOCK_BYTES = 4096


def corpus_fingerprint(files: Sequence[Path]) -> str:
    """sha256 (hex) of the files' sizes, mtimes and sampled blocks, in the files' order; CorpusError for a file
    that cannot be read."""
    try:
        return _fingerprint(files)
    except OSError as error:
        raise CorpusError(f"{error.filename or files[0]}: cannot be read ({error.strerror or error})") from None


def prefix_fingerprint(prefix: str) -> str:
    """The fingerprint of a Megatron prefix's .idx and .bin files: a prefix read in place may change at the same path."""
    return corpus_fingerprint([Path(f"{prefix}.idx"), Path(f"{prefix}.bin")])


def _fingerprint(files: Sequence[Path]) -> str:
    total = hashlib.sha256()
    sizes = []
    for path in files:
        info = path.stat()
        sizes.append(info.st_size)
        total.update(f"{info.st_size}:{info.st_mtime_ns}\n".encode())
        with path.open("rb") as stream:
            total.update(_block(stream, 0))
            total.update(_block(stream, max(0, info.st_size - BLOCK_BYTES)))
    corpus_bytes = sum(sizes)
    offsets = sorted({corpus_bytes * i // SPREAD_BLOCKS for i in range(SPREAD_BLOCKS)}) if corpus_bytes else []
    start = 0
    for path, size in zip(files, sizes):
        inside = [offset - start for offset in offsets if start <= offset < start + size]
        if inside:
            with path.open("rb") as stream:
                for offset in inside:
                    total.update(_block(stream, offset))
        start += size
    return total.hexdigest()


def _block(stream, offset: int) -> bytes:
    stream.seek(offset)
    return stream.read(BLOCK_BYTES)
