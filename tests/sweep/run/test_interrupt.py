"""SIGTERM ends a command as Ctrl-C does (the sweep's own graceful stop: tests/sweep/run/test_sweep_run.py)."""

import os
import signal

import pytest

from sweep.run.interrupt import sigterm_interrupts


def test_sigterm_is_a_keyboard_interrupt_while_a_command_runs_and_left_as_it_was_after():
    # SIGTERM does what SIGINT does: Python's KeyboardInterrupt here, whatever an earlier test in this worker
    # (Ray Tune's fit, say) left as the SIGINT handler.
    previous_sigint = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        before = signal.getsignal(signal.SIGTERM)
        with pytest.raises(KeyboardInterrupt), sigterm_interrupts():
            os.kill(os.getpid(), signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) is before
    finally:
        signal.signal(signal.SIGINT, previous_sigint)
