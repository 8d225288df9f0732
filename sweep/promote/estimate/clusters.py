"""Clusters: the GPUs a plan is laid out on, with the numbers the memory and step-time models need.

The preset is the reference recipe's cluster: 60 DGX-class nodes of 8 NVIDIA H100 SXM 80 GB, with
Transformer Engine in its image (NVIDIA's PyTorch containers ship it).
Figures from NVIDIA's H100 Tensor Core GPU datasheet: 989 TFLOP/s dense bf16 (the 1979 on the
sheet is with 2:4 sparsity), 80 GB HBM3, NVLink 4 at 900 GB/s per GPU (both directions summed);
and from the DGX H100 user guide: one ConnectX-7 400 Gb/s InfiniBand NDR port per GPU.
"""

from __future__ import annotations

from pydantic import Field

from sweep.target.presets import Name, preset_or_file
from train_entry.config import StrictConfig


class Cluster(StrictConfig):
    """Identical nodes of identical GPUs: NVLink (or similar) inside a node, a network between nodes."""

    name: Name
    """Short name used in the plan id and directory, e.g. h100-480."""
    nodes: int = Field(gt=0)
    gpus_per_node: int = Field(gt=0)
    """Also the largest tensor-parallel size: TP traffic must stay on the intra-node links."""
    gpu_memory_gb: float = Field(gt=0.0)
    """Memory per GPU in GB (1e9 bytes), as the vendor states it; layouts above it are refused."""
    peak_bf16_tflops: float = Field(gt=0.0)
    """Dense (not sparse) bf16 tensor-core peak per GPU, in TFLOP/s: what MFU is a fraction of."""
    intra_node_gb_per_s: float = Field(gt=0.0)
    """Intra-node (NVLink) bandwidth per GPU and direction, GB/s: half of NVIDIA's bidirectional figure."""
    inter_node_gb_per_s: float = Field(gt=0.0)
    """Inter-node (InfiniBand) bandwidth per GPU and direction, GB/s: 400 Gb/s NDR is 50 GB/s."""
    transformer_engine: bool = True
    """Whether the cluster's image has Transformer Engine (the full-run extra: pip install '.[full-run]').
    Without it the entry runs megatron-core's local layers, which cannot run sequence or context
    parallelism, so the layout search leaves both out and the plan says what that costs."""
    source: str = ""
    """Where the figures come from, shown in the summary."""

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


PRESETS: dict[str, Cluster] = {
    cluster.name: cluster
    for cluster in (
        Cluster(
            name="h100-480",
            nodes=60,
            gpus_per_node=8,
            gpu_memory_gb=80.0,
            peak_bf16_tflops=989.0,
            intra_node_gb_per_s=450.0,
            inter_node_gb_per_s=50.0,
            source="NVIDIA H100 SXM datasheet; DGX H100 user guide (8x ConnectX-7 400 Gb/s per node)",
        ),
    )
}

DEFAULT_CLUSTER = "h100-480"


def load_cluster(name_or_path: str, *, transformer_engine: bool | None = None) -> Cluster:
    """A preset by name, or a cluster YAML file (keys: the fields of Cluster); transformer_engine, when given,
    in place of the cluster's own (the image a promotion is told it runs)."""
    cluster = preset_or_file(name_or_path, PRESETS, Cluster, kind="cluster")
    if transformer_engine is None:
        return cluster
    return cluster.model_copy(update={"transformer_engine": transformer_engine})
