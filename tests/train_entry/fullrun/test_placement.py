"""The rank-to-node check on layouts that pass and fail, and the job config's own layout check."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from train_entry.fullrun.config import JobConfig, MegatronTrainer
from train_entry.fullrun.placement import PlacementError, check_tensor_parallel_groups, placement_lines


@pytest.mark.parametrize(
    ("nodes", "tp"),
    [
        (["a"] * 8 + ["b"] * 8, 8),  # two 8-GPU nodes, TP 8: one group per node
        (["a"] * 8 + ["b"] * 8, 4),
        (["a", "a", "b", "b"], 2),  # the rehearsal's 2 nodes x 2 workers
        (["a", "b", "c"], 1),  # TP 1 never spans nodes
    ],
)
def test_tensor_parallel_groups_on_one_node_pass(nodes, tp):
    check_tensor_parallel_groups(nodes, tp)


def test_a_group_across_nodes_is_named_with_its_ranks_and_nodes():
    with pytest.raises(PlacementError) as error:
        check_tensor_parallel_groups(["a", "a", "a", "b", "b", "b"], 2)
    message = str(error.value)
    assert "tensor-parallel group 1 (ranks 2-3) spans 2 nodes" in message
    assert "rank 2 on node a, rank 3 on node b" in message


def test_interleaved_placement_fails_at_the_first_group():
    with pytest.raises(PlacementError, match=r"group 0 \(ranks 0-1\).*rank 0 on node a, rank 1 on node b"):
        check_tensor_parallel_groups(["a", "b", "a", "b"], 2)


def test_a_world_that_does_not_split_into_groups_is_refused():
    with pytest.raises(PlacementError, match="tensor_parallel=4"):
        check_tensor_parallel_groups(["a"] * 6, 4)


def test_placement_lines_list_each_nodes_ranks_in_rank_order():
    assert placement_lines(["n1", "n1", "n2", "n2"]) == ["node n1: ranks 0, 1", "node n2: ranks 2, 3"]


def job(**overrides):
    return JobConfig(**{
        "name": "cpt-x", "num_workers": 16, "workers_per_node": 8, "use_gpu": True, "resources_per_worker": {"GPU": 1},
        "tensor_parallel": 8, "steps": 100, "checkpoint_interval": 10, "max_failures": 3,
        "storage_path": "/shared/ray", "trainer": MegatronTrainer(run={}), **overrides,
    })  # fmt: skip


def test_job_config_round_trips_through_json():
    config = job()
    assert JobConfig.model_validate_json(config.model_dump_json()) == config


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"tensor_parallel": 3}, "workers_per_node must be a multiple of tensor_parallel"),
        ({"num_workers": 12}, "num_workers must fill whole nodes"),
    ],
)
def test_job_config_refuses_layouts_that_split_groups_or_nodes(overrides, message):
    with pytest.raises(ValidationError, match=message):
        job(**overrides)
