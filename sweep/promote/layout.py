"""The layout search: every 3D(+CP) layout Megatron accepts for a model on a cluster, with its memory
and step time, ranked by step time among those that fit in GPU memory.

Megatron's constraints, each checked and named when a request breaks it:
  TP <= GPUs per node (TP traffic stays on NVLink) and TP divides the attention heads, the
  key/value heads and the vocabulary; PP x VPP divides the layers; CP x 2 divides the sequence
  (megatron-core's load-balanced causal split); TP x PP x CP x DP = GPUs; the global batch is a
  multiple of micro-batch x DP; the interleaved schedule needs at least PP microbatches per step,
  in whole groups of PP (megatron-core's microbatch_group_size_per_vp_stage defaults to PP).
And the entry's: sequence and context parallelism need Transformer Engine's layers, so on a
cluster whose image has none the search runs TP without sequence parallelism, and CP 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from sweep.promote.assumptions import Assumptions
from sweep.promote.clusters import Cluster
from sweep.promote.errors import PromotionError
from sweep.promote.memory import Memory, memory_per_gpu
from sweep.promote.step_time import StepTime, step_time
from train_entry.config import StrictConfig
from train_entry.megatron.config import ModelShape, Parallelism, ddp_bucket_size, interleaving_fits

Recompute = Literal["none", "selective", "full"]
Shape = tuple[int, int, int | None, int, int]
"""(TP, PP, VPP, CP, DP); VPP is None for the plain (non-interleaved) 1F1B schedule."""
BatchedShape = tuple[int, int, int | None, int, int, int]
"""A shape and its micro-batch size: (TP, PP, VPP, CP, DP, micro-batch)."""

MICRO_BATCH_SIZES = (1, 2, 4)
"""Micro-batches tried: at 8K-token sequences more than 4 never fits beside a large model."""


class LayoutRequest(StrictConfig):
    """Parts of the layout fixed by the user; the search fills in the rest."""

    tensor: int | None = Field(None, ge=1)
    pipeline: int | None = Field(None, ge=1)
    virtual_pipeline: int | None = Field(None, ge=1)
    """1 forces the plain (non-interleaved) 1F1B schedule."""
    context: int | None = Field(None, ge=1)
    micro_batch_size: int | None = Field(None, ge=1)
    recompute: Recompute | None = None


class RankedLayout(StrictConfig):
    """One layout with what it costs."""

    parallelism: Parallelism
    data_parallel: int
    memory: Memory
    step: StepTime


@dataclass(frozen=True)
class LayoutSearch:
    ranked: list[RankedLayout]
    """Layouts that fit in GPU memory, fastest first."""
    considered: int
    """Layouts that satisfied Megatron's constraints, before the memory check."""


def search_layouts(
    model: ModelShape, cluster: Cluster, *, global_batch_size: int, request: LayoutRequest, assumptions: Assumptions
) -> LayoutSearch:
    """Every valid layout that fits, fastest first; PromotionError naming the constraint when none does."""
    shapes = _shapes(model, cluster, request)
    batched = _batched(model, shapes, global_batch_size, request.micro_batch_size)
    scheduled = _scheduled(batched, global_batch_size)
    recomputes: Iterable[Recompute] = (request.recompute,) if request.recompute else ("none", "selective", "full")
    layouts = [
        _rank(model, cluster, assumptions, global_batch_size, shape, recompute)
        for shape in scheduled
        for recompute in recomputes
    ]
    return LayoutSearch(ranked=_fitting(layouts, cluster), considered=len(layouts))


def fastest_with_transformer_engine(
    model: ModelShape, cluster: Cluster, *, global_batch_size: int, request: LayoutRequest, assumptions: Assumptions
) -> RankedLayout | None:
    """On a cluster whose image has no Transformer Engine: the layout the search would choose if it had TE
    (sequence and context parallelism allowed), to say what going without costs. None when the cluster
    has TE, or when no layout fits even with it."""
    if cluster.transformer_engine:
        return None
    with_te = cluster.model_copy(update={"transformer_engine": True})
    try:
        search = search_layouts(
            model, with_te, global_batch_size=global_batch_size, request=request, assumptions=assumptions
        )
    except PromotionError:
        return None
    return search.ranked[0]


def _shapes(model: ModelShape, cluster: Cluster, request: LayoutRequest) -> list[Shape]:
    """(TP, PP, VPP, CP, DP) of every split of the cluster's GPUs that the request and the model allow."""
    tensors = _tensor_sizes(model, cluster, request.tensor)
    splits = _pipeline_splits(model, request.pipeline, request.virtual_pipeline)
    contexts = _context_sizes(model, request.context, transformer_engine=cluster.transformer_engine)
    shapes = [
        (tp, pp, vpp, cp, cluster.gpus // (tp * pp * cp))
        for tp in tensors
        for pp, vpp in splits
        for cp in contexts
        if cluster.gpus % (tp * pp * cp) == 0
    ]
    if not shapes:
        raise PromotionError(
            f"no layout has TP x PP x CP x DP = {cluster.gpus} GPUs ({cluster.nodes} nodes x "
            f"{cluster.gpus_per_node}): TP in {tensors}, PP in {sorted({pp for pp, _ in splits})}, CP in {contexts}"
        )
    return shapes


def _batched(
    model: ModelShape, shapes: list[Shape], global_batch_size: int, forced_micro_batch: int | None
) -> list[BatchedShape]:
    """Each shape with every micro-batch size whose multiples by DP make up the global batch."""
    micro_sizes = (forced_micro_batch,) if forced_micro_batch else MICRO_BATCH_SIZES
    batched = [
        (tp, pp, vpp, cp, dp, mbs)
        for tp, pp, vpp, cp, dp in shapes
        for mbs in micro_sizes
        if global_batch_size % (mbs * dp) == 0
    ]
    if not batched:
        data_sizes = sorted({dp for *_, dp in shapes})
        raise PromotionError(
            f"global batch size {global_batch_size} sequences is not a multiple of micro-batch x DP for any "
            f"layout: DP in {data_sizes}, micro-batch in {list(micro_sizes)}; choose a global batch divisible by "
            f"one of them (in --global-batch-tokens, times the sequence length {model.seq_length})"
        )
    return batched


def _scheduled(batched: list[BatchedShape], global_batch_size: int) -> list[BatchedShape]:
    """The batched shapes whose microbatches per step the pipeline schedule can take (interleaving_fits)."""
    scheduled = [
        (tp, pp, vpp, cp, dp, mbs)
        for tp, pp, vpp, cp, dp, mbs in batched
        if interleaving_fits(pipeline=pp, virtual_pipeline=vpp, microbatches=global_batch_size // (mbs * dp))
    ]
    if not scheduled:
        raise PromotionError(
            "the interleaved pipeline schedule needs the microbatches per step to be a multiple of PP "
            f"(and at least PP); no requested layout has that with global batch {global_batch_size}"
        )
    return scheduled


def _fitting(layouts: list[RankedLayout], cluster: Cluster) -> list[RankedLayout]:
    """The layouts that fit in GPU memory, fastest first (the smaller memory breaks a tie)."""
    fitting = sorted(
        (layout for layout in layouts if layout.memory.total_gb <= cluster.gpu_memory_gb),
        key=lambda layout: (layout.step.total_s, layout.memory.total_gb),
    )
    if not fitting:
        least = min(layouts, key=lambda layout: layout.memory.total_gb)
        raise PromotionError(
            f"the model fits no layout in {cluster.gpu_memory_gb:g} GB per GPU on {cluster.gpus} GPUs: "
            f"the least memory of {len(layouts)} valid layouts is {least.memory.total_gb:.1f} GB "
            f"({describe(least)}; {least.memory.params_billion:.2f} B parameters on its {least.memory.stage} stage)"
        )
    return fitting


def describe(layout: RankedLayout) -> str:
    """TP 8 x PP 4 (VPP 5) x CP 1 x DP 15, micro-batch 1, recompute none"""
    par = layout.parallelism
    vpp = f" (VPP {par.virtual_pipeline})" if par.virtual_pipeline else ""
    return (
        f"TP {par.tensor} x PP {par.pipeline}{vpp} x CP {par.context} x DP {layout.data_parallel}, "
        f"micro-batch {par.micro_batch_size}, recompute {par.recompute}"
    )


def _tensor_sizes(model: ModelShape, cluster: Cluster, forced: int | None) -> list[int]:
    def violation(tp: int) -> str | None:
        if tp > cluster.gpus_per_node:
            return f"TP must not exceed the GPUs per node ({cluster.gpus_per_node}) so that its traffic stays on NVLink"
        for what, count in (
            ("attention heads", model.num_attention_heads),
            ("key/value heads (query groups)", model.num_query_groups),
            ("vocabulary size", model.vocab_size),
        ):
            if count % tp:
                return f"TP must divide the {what} ({count})"
        return None

    if forced is not None:
        if (reason := violation(forced)) is not None:
            raise PromotionError(f"tensor parallel size {forced} is invalid: {reason}")
        return [forced]
    return [tp for tp in range(1, cluster.gpus_per_node + 1) if violation(tp) is None]


def _pipeline_splits(model: ModelShape, forced_pp: int | None, forced_vpp: int | None) -> list[tuple[int, int | None]]:
    layers = model.num_layers
    if forced_pp is not None and layers % forced_pp:
        raise PromotionError(f"pipeline parallel size {forced_pp} is invalid: PP must divide the layers ({layers})")
    if forced_vpp is not None and forced_vpp > 1 and forced_pp == 1:
        raise PromotionError("virtual pipeline size needs pipeline parallel size >= 2 (interleaving needs stages)")
    pipelines = [forced_pp] if forced_pp is not None else [pp for pp in range(1, layers + 1) if layers % pp == 0]
    splits: list[tuple[int, int | None]] = []
    for pp in pipelines:
        per_stage = layers // pp
        if forced_vpp is not None:
            if forced_vpp == 1:
                splits.append((pp, None))
            elif pp > 1 and per_stage % forced_vpp == 0:
                splits.append((pp, forced_vpp))
            continue
        splits.append((pp, None))
        if pp > 1:
            splits.extend((pp, vpp) for vpp in range(2, per_stage + 1) if per_stage % vpp == 0)
    if not splits:
        raise PromotionError(
            f"virtual pipeline size {forced_vpp} is invalid: PP x VPP must divide the layers ({layers})"
            + (f", got PP {forced_pp}" if forced_pp is not None else " for some PP >= 2")
        )
    return splits


def _context_sizes(model: ModelShape, forced: int | None, *, transformer_engine: bool) -> list[int]:
    def valid(cp: int) -> bool:
        return cp == 1 or model.seq_length % (2 * cp) == 0

    if not transformer_engine:
        if forced not in (None, 1):
            raise PromotionError(
                f"context parallel size {forced} needs Transformer Engine's layers, and the cluster's image has none "
                "(transformer_engine: false): plan with --context-parallel 1, or for an image with TE"
            )
        return [1]
    if forced is not None:
        if not valid(forced):
            raise PromotionError(
                f"context parallel size {forced} is invalid: 2 x CP must divide the sequence length ({model.seq_length})"
            )
        return [forced]
    return [cp for cp in range(1, model.seq_length // 2 + 1) if valid(cp)]


def _rank(
    model: ModelShape,
    cluster: Cluster,
    assumptions: Assumptions,
    global_batch_size: int,
    shape: BatchedShape,
    recompute: Recompute,
) -> RankedLayout:
    tp, pp, vpp, cp, dp, mbs = shape
    par = Parallelism(
        tensor=tp,
        pipeline=pp,
        virtual_pipeline=vpp,
        context=cp,
        data=dp,
        micro_batch_size=mbs,
        global_batch_size=global_batch_size,
        sequence_parallel=tp > 1 and cluster.transformer_engine,
        recompute=recompute,
        ddp_bucket_size=ddp_bucket_size(dp),
    )
    return RankedLayout(
        parallelism=par,
        data_parallel=dp,
        memory=memory_per_gpu(model, par, data_parallel=dp, reserve_gb=assumptions.memory_reserve_gb),
        step=step_time(model, par, data_parallel=dp, cluster=cluster, assumptions=assumptions),
    )
