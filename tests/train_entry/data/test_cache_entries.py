"""Cache entries are complete or absent, whatever happens to the process that builds them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from train_entry.data.cache import cached_dir, digest


def test_a_failed_build_leaves_nothing_behind(tmp_path: Path) -> None:
    def build(directory: Path) -> None:
        (directory / "half.bin").write_bytes(b"partial")
        raise RuntimeError("killed mid-build")

    with pytest.raises(RuntimeError, match="killed mid-build"):
        cached_dir(tmp_path / "entry", build)

    assert list(tmp_path.iterdir()) == []


def test_of_two_concurrent_builders_the_first_to_finish_wins(tmp_path: Path) -> None:
    entry = tmp_path / "entry"

    def winner(directory: Path) -> None:
        (directory / "data").write_text("winner")

    def loser(directory: Path) -> None:
        (directory / "data").write_text("loser")
        # Another process completes the same entry while this one is still building.
        cached_dir(entry, winner)

    assert cached_dir(entry, loser) == entry
    assert (entry / "data").read_text() == "winner"
    assert [path.name for path in tmp_path.iterdir()] == ["entry"]


def test_an_existing_entry_is_returned_without_building(tmp_path: Path) -> None:
    entry = cached_dir(tmp_path / "entry", lambda directory: (directory / "data").write_text("first"))

    def must_not_run(directory: Path) -> None:
        raise AssertionError("rebuilt an existing entry")

    assert cached_dir(entry, must_not_run) == entry
    assert (entry / "data").read_text() == "first"


def test_digest_reads_file_contents_and_frames_its_parts(tmp_path: Path) -> None:
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("same bytes")
    second.write_text("same bytes")

    assert digest(first, 1) == digest(second, 1)
    assert digest(first, 1) != digest(first, 2)
    assert digest("ab", "c") != digest("a", "bc")
    second.write_text("other bytes")
    assert digest(first, 1) != digest(second, 1)


def test_a_build_removes_what_killed_builders_on_this_host_left_and_nothing_else(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid no longer runs
    host = socket.gethostname()
    killed = tmp_path / f".entry.{host}-{dead.pid}.k1l2.tmp"
    running = tmp_path / f".entry.{host}-{os.getpid()}.r3n4.tmp"  # a live build of the same entry
    elsewhere = tmp_path / f".entry.another-host-{dead.pid}.e5l6.tmp"  # a shared cache: not ours to judge
    for scratch in (killed, running, elsewhere):
        scratch.mkdir()
        (scratch / "half.bin").write_bytes(b"partial")

    cached_dir(tmp_path / "entry", lambda directory: (directory / "data").write_text("built"))
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(["entry", running.name, elsewhere.name])
