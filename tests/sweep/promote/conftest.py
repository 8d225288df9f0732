"""Fixtures of the promotion tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.sweep.promote.promote_runs import write_run


@pytest.fixture
def finished_run(tmp_path) -> Callable[..., Path]:
    """finished_run(**optimum) -> a run directory named lr_mix whose optimum is given."""
    return lambda **optimum: write_run(tmp_path / "runs" / "lr_mix", **optimum)
