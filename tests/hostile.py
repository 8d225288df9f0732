"""What the hostile-input tests check besides the exit code: no connection was tried, no file appeared or vanished."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def no_connections() -> Iterator[list[object]]:
    """Within it, every connect of a Python socket fails; yields the addresses that were tried.

    A refusal must happen before anything is sent, so a test asserts the list stays empty; a
    test of an allowed address asserts the attempt was made (and it fails without a network).
    """
    tried: list[object] = []

    def refuse(sock: socket.socket, address: object) -> None:
        tried.append(address)
        raise ConnectionRefusedError(f"test: no connection may be made, but one to {address} was tried")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(socket.socket, "connect_ex", refuse)
        yield tried


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """{relative path: (size, mtime in ns)} of everything under root, links included but not followed."""
    return {str(path.relative_to(root)): (path.lstat().st_size, path.lstat().st_mtime_ns) for path in root.rglob("*")}


def files_but_the_study(root: Path) -> dict[str, tuple[int, int]]:
    """tree(root)'s files but the study's SQLite files, which opening the study to read it may checkpoint (its WAL),
    changing them and their folder's time."""
    return {name: info for name, info in tree(root).items() if "optuna.db" not in name and (root / name).is_file()}
