"""Which processes are left of a local Ray cluster: what the launch tests check after stopping one.
A module of its own name, so that the tests of this folder import it without a package."""

from __future__ import annotations

from pathlib import Path


def processes_mentioning(text: str) -> list[int]:
    """Pids whose command line contains `text` (from /proc: Ray's local clusters run on Linux here)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:  # the process ended while we looked
            continue
    return found
