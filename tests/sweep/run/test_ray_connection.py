"""One Ray for a command's sweeps (a ladder's rungs): kept while the next sweep's trials fit it, started again
larger when they do not, gone when the command ends."""

from __future__ import annotations

import pytest
import ray

from sweep.run.driver import RayConnection
from sweep.run.trial_slots import local_gpus
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


def test_a_ladder_counts_this_machines_gpus_without_starting_ray_and_a_clusters_once_joined():
    with RayConnection(address=None, wandb=None) as connection:
        assert connection.gpus(ExecutionConfig(gpus=1)) == local_gpus()
        assert not ray.is_initialized()
    # A Ray already joined stands in for the cluster at --address: its GPUs, not this machine's, are what trials take.
    ray.init(address="local", num_cpus=1, num_gpus=2, include_dashboard=False)
    with RayConnection(address="auto", wandb=None) as connection:
        assert connection.gpus(ExecutionConfig(gpus=1)) == 2
    assert not ray.is_initialized()
