"""One Ray for a command's sweeps (a ladder's rungs): kept while the next sweep's trials fit it, started again
larger when they do not, gone when the command ends."""

from __future__ import annotations

import pytest
import ray

from sweep.run.driver import RayConnection, machine_cpus
from sweep.run.trial_slots import ClusterTooSmall, local_gpus
from sweep.spec.spec import ExecutionConfig

pytestmark = pytest.mark.slow  # two Ray starts, ~15 s of CPU


def test_a_sweep_whose_trials_fit_keeps_the_ray_and_a_larger_one_starts_another():
    with RayConnection(address=None, wandb=None) as connection:
        connection.ensure(ExecutionConfig(concurrency=2))
        first = ray.get_runtime_context().get_node_id()
        assert ray.cluster_resources()["CPU"] == 2

        connection.ensure(ExecutionConfig(concurrency=1))  # a smaller rung: the same Ray
        assert ray.get_runtime_context().get_node_id() == first

        connection.ensure(ExecutionConfig(workers=2))  # a larger one (two workers and their job's driver)
        assert ray.get_runtime_context().get_node_id() != first
        assert ray.cluster_resources()["CPU"] == 3
    assert not ray.is_initialized()


@pytest.mark.skipif(machine_cpus() > 8, reason="the request below must be more than this machine has")
def test_a_trial_larger_than_this_machine_is_refused_with_the_figures_before_ray_starts():
    """A Ray of our own was sized to the request (65 CPUs on 2 cores), so the cluster check never fired and 64
    workers reached 6.3 GB before they were killed."""
    with RayConnection(address=None, wandb=None) as connection:
        with pytest.raises(ClusterTooSmall) as raised:
            connection.ensure(ExecutionConfig(workers=64))
        assert not ray.is_initialized()
    assert str(raised.value).startswith(
        f"a trial computes on 64 CPU(s) (execution.cpus = 1 per worker, 64 worker(s)) and this machine has "
        f"{machine_cpus()}; lower execution.cpus or execution.workers"
    )


@pytest.mark.skipif(machine_cpus() > 8, reason="the request below must be more than this machine has")
def test_more_trials_at_once_than_this_machine_holds_get_a_ray_of_its_size():
    with RayConnection(address=None, wandb=None) as connection:
        connection.ensure(ExecutionConfig(concurrency=16))
        assert ray.cluster_resources()["CPU"] == machine_cpus()


def test_a_ladder_counts_this_machines_gpus_without_starting_ray_and_a_clusters_once_joined():
    with RayConnection(address=None, wandb=None) as connection:
        assert connection.gpus(ExecutionConfig(gpus=1)) == local_gpus()
        assert not ray.is_initialized()
    # A Ray already joined stands in for the cluster at --address: its GPUs, not this machine's, are what trials take.
    ray.init(address="local", num_cpus=1, num_gpus=2, include_dashboard=False)
    with RayConnection(address="auto", wandb=None) as connection:
        assert connection.gpus(ExecutionConfig(gpus=1)) == 2
    assert not ray.is_initialized()
