"""One Ray for a command's sweeps (a ladder's rungs): kept while the next sweep's trials fit it, started again
larger when they do not, gone when the command ends."""

from __future__ import annotations

import pytest
import ray

from sweep.run.driver import RayConnection
from sweep.spec.spec import ExecutionConfig

pytestmark = pytest.mark.slow  # two Ray starts, ~15 s of CPU


def test_a_sweep_whose_trials_fit_keeps_the_ray_and_a_larger_one_starts_another():
    with RayConnection(address=None, wandb=None) as connection:
        connection.ensure(ExecutionConfig(concurrency=2))
        first = ray.get_runtime_context().get_node_id()
        assert ray.cluster_resources()["CPU"] == 2

        connection.ensure(ExecutionConfig(concurrency=1))  # a smaller rung: the same Ray
        assert ray.get_runtime_context().get_node_id() == first

        connection.ensure(ExecutionConfig(concurrency=3))  # a larger one: a Ray its trials fit
        assert ray.get_runtime_context().get_node_id() != first
        assert ray.cluster_resources()["CPU"] == 3
    assert not ray.is_initialized()
