from collections.abc import Callable

import pytest
from scripted import spec_with

from sweep.study.study import SweepStudy, open_study


@pytest.fixture
def open_sweep(tmp_path) -> Callable[..., SweepStudy]:
    """open_sweep(**search overrides) -> the study of a sweep of the default spec, in SQLite."""

    def open_(**search) -> SweepStudy:
        return open_study(spec_with(**search).plan(), url=f"sqlite:///{tmp_path / 'optuna.db'}", name="test")

    return open_
