from collections.abc import Callable
from pathlib import Path

import pytest
from scripted import spec_with

from sweep.study.study import SweepStudy, open_study
from tests.sweep.promote.promote_runs import write_run


@pytest.fixture
def open_sweep(tmp_path) -> Callable[..., SweepStudy]:
    """open_sweep(**search overrides) -> the study of a sweep of the default spec, in SQLite."""

    def open_(**search) -> SweepStudy:
        return open_study(spec_with(**search).plan(), url=f"sqlite:///{tmp_path / 'optuna.db'}", name="test")

    return open_


@pytest.fixture
def finished_run(tmp_path) -> Callable[..., Path]:
    """finished_run(**optimum) -> a run directory named lr_mix whose optimum is given (promotion's and the target
    families' tests plan from it)."""
    return lambda **optimum: write_run(tmp_path / "runs" / "lr_mix", **optimum)
