"""benchmarks/machine_speed.py refuses a round count it cannot take a median of, before any workload runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import machine_speed


def test_no_rounds_is_exit_2_in_one_line(capsys, monkeypatch):
    monkeypatch.setattr(machine_speed, "start_s", lambda: pytest.fail("a workload ran"))
    with pytest.raises(SystemExit) as exited:
        machine_speed.main(["--rounds", "0"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(": error: --rounds 0: give 1 or more")
