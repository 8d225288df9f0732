"""The rank-to-node check: every tensor-parallel group must sit on one node.

Tensor parallelism all-reduces inside every layer, so its ranks must share NVLink; a TP group
split across nodes would run, slowly, over the network. Megatron orders ranks with TP innermost:
ranks [k*TP, (k+1)*TP) form TP group k. A pure function of (node of each rank, TP), so the check
is tested without a cluster and runs in every worker before any training.
"""

from __future__ import annotations

from collections.abc import Sequence


class PlacementError(RuntimeError):
    """Workers were placed so that a tensor-parallel group spans nodes."""


def check_tensor_parallel_groups(node_of_rank: Sequence[str], tensor_parallel: int) -> None:
    """Raises PlacementError naming the first group, its ranks and their nodes, when a TP group spans nodes."""
    world = len(node_of_rank)
    if tensor_parallel < 1 or world % tensor_parallel:
        raise PlacementError(
            f"the world of {world} ranks does not split into tensor-parallel groups of {tensor_parallel=}"
        )
    for group in range(world // tensor_parallel):
        ranks = range(group * tensor_parallel, (group + 1) * tensor_parallel)
        nodes = {node_of_rank[rank] for rank in ranks}
        if len(nodes) > 1:
            where = ", ".join(f"rank {rank} on node {node_of_rank[rank]}" for rank in ranks)
            raise PlacementError(
                f"tensor-parallel group {group} (ranks {ranks.start}-{ranks.stop - 1}) spans {len(nodes)} nodes: "
                f"{where}; each TP group must sit on one node (workers per node must be a multiple of "
                f"TP={tensor_parallel}, placed node by node)"
            )


def placement_lines(node_of_rank: Sequence[str]) -> list[str]:
    """One line per node with its ranks, in rank order: what a job log shows before training."""
    ranks_of: dict[str, list[int]] = {}
    for rank, node in enumerate(node_of_rank):
        ranks_of.setdefault(node, []).append(rank)
    return [f"node {node}: ranks {', '.join(map(str, ranks))}" for node, ranks in ranks_of.items()]
