"""SIGTERM, what schedulers and `docker stop` send, ends a command as Ctrl-C does.

During a sweep Ctrl-C is Ray Tune's graceful stop: the trials are stopped, those interrupted stay
RUNNING in the study for the next `sweep run` to re-run, and the driver prints what finished and the
rerun line. Elsewhere it is a KeyboardInterrupt, which the CLI ends with one line.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_INTERRUPTED = 130
"""128 + SIGINT, what a shell reports for a command ended by Ctrl-C."""


def sigterm_as_sigint() -> None:
    """Routes SIGTERM to whatever handles SIGINT at the time it arrives (Python sets handlers in its main
    thread only; elsewhere nothing changes).

    Call it again after `ray.init`: Ray installs its own SIGTERM handling on the driver (its core
    worker's prints a C++ stack dump and aborts with exit 134, the trials left to Ray's cleanup).
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _as_sigint)


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM as SIGINT while a command runs, the previous handling back after it (a test may run the CLI
    in its own process)."""
    previous = signal.getsignal(signal.SIGTERM)
    sigterm_as_sigint()
    try:
        yield
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)


def _as_sigint(signum, frame) -> None:
    signal.raise_signal(signal.SIGINT)
