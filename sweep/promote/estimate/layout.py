"""The layout search: every 3D(+CP) layout Megatron accepts for a model on a cluster, with its memory
and step time, ranked by step time among those that fit in GPU memory.

Megatron's constraints, each checked and named when a request breaks it:
  TP <= GPUs per node (TP traffic stays on NVLink) and TP divides the attention heads, the
  key/value heads and the vocabulary; PP x VPP divides the layers, or, without VPP, the stages between
  the first and the last hold equal shares and the first and last fewer (Megatron-LM's
  --decoder-first/last-pipeline-num-layers; Meta trained Llama 3 405B so, arXiv:2407.21783 section 3.3.2).
  Uneven splits are searched only when no even one fits (or a pinned PP does not divide the layers): where
  an even split fits, an uneven one wins by no more than this model's precision, and costs two more flags
  to keep right across restarts; CP x 2 divides the sequence
  (megatron-core's load-balanced causal split); TP x PP x CP x DP = GPUs; the global batch is a
  multiple of micro-batch x DP; the interleaved schedule needs at least PP microbatches per step,
  in whole groups of PP (megatron-core's microbatch_group_size_per_vp_stage defaults to PP).
An MoE model's experts split over EP ranks (EP divides the experts), each expert over ETP ranks (1 or TP),
EP x ETP dividing TP x CP x DP (megatron-core's parallel folding); EP > 1 with TP > 1 needs sequence
parallelism (megatron-core's ModelParallelConfig).
And the entry's: sequence and context parallelism need Transformer Engine's layers, so on a
cluster whose image has none the search runs TP without sequence parallelism, and CP 1; sliding-window
attention runs at CP 1 (Transformer Engine's ring-exchange context parallelism, megatron-core's default
cp_comm_type p2p, takes no window).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, NamedTuple

from pydantic import Field

from sweep.promote.errors import PromotionError
from sweep.promote.estimate.assumptions import Assumptions
from sweep.promote.estimate.clusters import Cluster
from sweep.promote.estimate.memory import Memory, memory_per_gpu
from sweep.promote.estimate.step_time import StepTime, step_time
from train_entry.config import StrictConfig
from train_entry.megatron.config import ModelShape, Parallelism, ddp_bucket_size, interleaving_fits

Recompute = Literal["none", "selective", "full"]


class PipelineSplit(NamedTuple):
    """PP, VPP (None: plain 1F1B) and the layers of the first and last stages where they hold fewer (None: even)."""

    pipeline: int
    virtual: int | None = None
    first: int | None = None
    last: int | None = None


class Shape(NamedTuple):
    """One split of the GPUs: TP, a pipeline split, CP, DP, EP and ETP (None: TP's), and the micro-batch."""

    tensor: int
    split: PipelineSplit
    context: int
    data: int
    expert: int = 1
    expert_tensor: int | None = None
    micro_batch: int = 1


MICRO_BATCH_SIZES = (1, 2, 4)
"""Micro-batches tried: at 8K-token sequences more than 4 never fits beside a large model."""


class LayoutRequest(StrictConfig):
    """Parts of the layout fixed by the user; the search fills in the rest."""

    tensor: int | None = Field(None, ge=1)
    pipeline: int | None = Field(None, ge=1)
    virtual_pipeline: int | None = Field(None, ge=1)
    """1 forces the plain (non-interleaved) 1F1B schedule."""
    context: int | None = Field(None, ge=1)
    expert: int | None = Field(None, ge=1)
    """Expert-parallel size of an MoE target; 1 keeps every expert on every rank."""
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
    """Every valid layout that fits, fastest first; PromotionError naming the constraint when none does. Even
    pipeline splits first, uneven ones only when none of those fits (the module docstring)."""
    query = {"global_batch_size": global_batch_size, "request": request, "assumptions": assumptions}
    try:
        return _search(model, cluster, uneven=False, **query)
    except PromotionError:
        return _search(model, cluster, uneven=True, **query)


def _search(
    model: ModelShape,
    cluster: Cluster,
    *,
    uneven: bool,
    global_batch_size: int,
    request: LayoutRequest,
    assumptions: Assumptions,
) -> LayoutSearch:
    shapes = _with_experts(model, _shapes(model, cluster, request, uneven=uneven), request.expert, cluster)
    batched = _batched(model, shapes, global_batch_size, request.micro_batch_size)
    scheduled = _scheduled(batched, global_batch_size)
    recomputes: Iterable[Recompute] = (request.recompute,) if request.recompute else ("none", "selective", "full")
    sized = [
        _sized(model, cluster, assumptions, global_batch_size, shape, recompute)
        for shape in scheduled
        for recompute in recomputes
    ]
    return LayoutSearch(ranked=_fitting(model, cluster, assumptions, sized), considered=len(sized))


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


def _shapes(model: ModelShape, cluster: Cluster, request: LayoutRequest, *, uneven: bool) -> list[Shape]:
    """(TP, pipeline split, CP, DP) of every split of the cluster's GPUs that the request and the model allow."""
    tensors = _tensor_sizes(model, cluster, request.tensor)
    splits = _pipeline_splits(model, request.pipeline, request.virtual_pipeline, uneven=uneven)
    contexts = _context_sizes(model, request.context, transformer_engine=cluster.transformer_engine)
    shapes = [
        Shape(tp, split, cp, cluster.gpus // (tp * split.pipeline * cp))
        for tp in tensors
        for split in splits
        for cp in contexts
        if cluster.gpus % (tp * split.pipeline * cp) == 0
    ]
    if not shapes:
        raise PromotionError(
            f"no layout has TP x PP x CP x DP = {cluster.gpus} GPUs ({cluster.nodes} nodes x "
            f"{cluster.gpus_per_node}): TP in {tensors}, PP in {sorted({split.pipeline for split in splits})}, "
            f"CP in {contexts}"
        )
    return shapes


def _with_experts(model: ModelShape, shapes: list[Shape], forced: int | None, cluster: Cluster) -> list[Shape]:
    """Each shape with every expert split an MoE model allows (module docstring); a dense model's as they are."""
    moe = model.moe
    if moe is None:
        if forced not in (None, 1):
            raise PromotionError(f"expert parallel size {forced} is invalid: the target has no experts (no moe)")
        return shapes
    if forced is not None and moe.num_experts % forced:
        raise PromotionError(
            f"expert parallel size {forced} is invalid: EP must divide the experts ({moe.num_experts})"
        )
    experts = (
        [forced] if forced is not None else [ep for ep in range(1, moe.num_experts + 1) if moe.num_experts % ep == 0]
    )
    expanded = [
        shape._replace(expert=ep, expert_tensor=etp if etp != shape.tensor else None)
        for shape in shapes
        for ep in experts
        for etp in sorted({1, shape.tensor})
        if (shape.tensor * shape.context * shape.data) % (ep * etp) == 0
        # EP with TP needs sequence parallelism, which needs Transformer Engine's layers.
        and (ep == 1 or shape.tensor == 1 or cluster.transformer_engine)
    ]
    if not expanded:
        raise PromotionError(
            f"no layout splits the {moe.num_experts} experts: EP in {experts} x ETP (1 or TP) must divide "
            f"TP x CP x DP of some layout"
        )
    return expanded


def _batched(
    model: ModelShape, shapes: list[Shape], global_batch_size: int, forced_micro_batch: int | None
) -> list[Shape]:
    """Each shape with every micro-batch size whose multiples by DP make up the global batch."""
    micro_sizes = (forced_micro_batch,) if forced_micro_batch else MICRO_BATCH_SIZES
    batched = [
        shape._replace(micro_batch=mbs)
        for shape in shapes
        for mbs in micro_sizes
        if global_batch_size % (mbs * shape.data) == 0
    ]
    if not batched:
        data_sizes = sorted({shape.data for shape in shapes})
        raise PromotionError(
            f"global batch size {global_batch_size} sequences is not a multiple of micro-batch x DP for any "
            f"layout: DP in {data_sizes}, micro-batch in {list(micro_sizes)}; choose a global batch divisible by "
            f"one of them (in --global-batch-tokens, times the sequence length {model.seq_length})"
        )
    return batched


def _scheduled(batched: list[Shape], global_batch_size: int) -> list[Shape]:
    """The batched shapes whose microbatches per step the pipeline schedule can take (interleaving_fits)."""
    scheduled = [
        shape
        for shape in batched
        if interleaving_fits(
            pipeline=shape.split.pipeline,
            virtual_pipeline=shape.split.virtual,
            microbatches=global_batch_size // (shape.micro_batch * shape.data),
        )
    ]
    if not scheduled:
        raise PromotionError(
            "the interleaved pipeline schedule needs the microbatches per step to be a multiple of PP "
            f"(and at least PP); no requested layout has that with global batch {global_batch_size}"
        )
    return scheduled


def _fitting(model: ModelShape, cluster: Cluster, assumptions: Assumptions, sized: list[_Sized]) -> list[RankedLayout]:
    """The layouts that fit in GPU memory, timed, fastest first (the smaller memory breaks a tie). Only those are
    timed: a step time costs about what a memory estimate does, and few of a large model's layouts fit (18 of
    llama3.1-405b's 2,508 on 480 H100s)."""
    fits = [layout for layout in sized if layout.memory.total_gb <= cluster.gpu_memory_gb]
    fitting = sorted(
        (_timed(model, cluster, assumptions, layout) for layout in fits),
        key=lambda layout: (layout.step.total_s, layout.memory.total_gb),
    )
    if not fitting:
        least = _timed(model, cluster, assumptions, min(sized, key=lambda layout: layout.memory.total_gb))
        raise PromotionError(
            f"the model fits no layout in {cluster.gpu_memory_gb:g} GB per GPU on {cluster.gpus} GPUs: "
            f"the least memory of {len(sized)} valid layouts is {least.memory.total_gb:.1f} GB "
            f"({describe(least)}; {least.memory.params_billion:.2f} B parameters on its {least.memory.stage} stage)"
        )
    return fitting


def describe(layout: RankedLayout) -> str:
    """TP 8 x PP 4 (VPP 5) x CP 1 x DP 15, micro-batch 1, recompute none; with EP 8 (ETP 1) for an MoE model and
    (first 7, last 7 layers) for uneven stages"""
    par = layout.parallelism
    vpp = f" (VPP {par.virtual_pipeline})" if par.virtual_pipeline else ""
    stages = stage_text(par)
    stages = f" ({stages})" if stages else ""
    experts = (
        f", EP {par.expert} (ETP {par.expert_tensor or par.tensor})" if par.expert > 1 or par.expert_tensor else ""
    )
    return (
        f"TP {par.tensor} x PP {par.pipeline}{vpp}{stages} x CP {par.context} x DP {layout.data_parallel}{experts}, "
        f"micro-batch {par.micro_batch_size}, recompute {par.recompute}"
    )


def stage_text(par: Parallelism) -> str:
    """ "first 7, last 7 layers" for uneven stages; "" for an even split."""
    parts = [
        f"{name} {layers}"
        for name, layers in (("first", par.first_stage_layers), ("last", par.last_stage_layers))
        if layers is not None
    ]
    return f"{', '.join(parts)} layers" if parts else ""


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


def _pipeline_splits(
    model: ModelShape, forced_pp: int | None, forced_vpp: int | None, *, uneven: bool
) -> list[PipelineSplit]:
    """Even splits (with every VPP that divides them), and with `uneven` or a pinned PP that does not divide the
    layers, the uneven ones."""
    layers = model.num_layers
    uneven = uneven or (forced_pp is not None and layers % forced_pp != 0)
    if forced_pp is not None and forced_pp > layers:
        raise PromotionError(f"pipeline parallel size {forced_pp} is invalid: PP must not exceed the layers ({layers})")
    if forced_vpp is not None and forced_vpp > 1 and forced_pp == 1:
        raise PromotionError("virtual pipeline size needs pipeline parallel size >= 2 (interleaving needs stages)")
    pipelines = [forced_pp] if forced_pp is not None else list(range(1, layers + 1))
    splits: list[PipelineSplit] = []
    for pp in pipelines:
        even = layers % pp == 0
        per_stage = layers // pp
        if forced_vpp is None or forced_vpp == 1:
            splits.extend(([PipelineSplit(pp)] if even else []) + (_uneven_splits(layers, pp) if uneven else []))
        if pp > 1 and even and forced_vpp != 1:
            vpps = [forced_vpp] if forced_vpp is not None else range(2, per_stage + 1)
            splits.extend(PipelineSplit(pp, vpp) for vpp in vpps if per_stage % vpp == 0)
    if not splits:
        raise PromotionError(
            f"virtual pipeline size {forced_vpp} is invalid: PP x VPP must divide the layers ({layers})"
            + (f", got PP {forced_pp}" if forced_pp is not None else " for some PP >= 2")
        )
    return splits


def _uneven_splits(layers: int, pp: int) -> list[PipelineSplit]:
    """Where PP does not divide the layers: the stages between the first and last hold the smallest share above an
    even one (layers // PP + 1), and the first and last halve the rest (the last the smaller half, as it also runs
    the output layer, and the other way round when they differ), both fewer than a middle stage, as Meta split
    Llama 3 405B; [] otherwise (an even split needs no flags, and one stage fuller than the others only slows the
    pipeline)."""
    if pp < 2 or layers % pp == 0:
        return []
    middle = layers // pp + 1
    rest = layers - middle * (pp - 2)
    pairs = {(rest - rest // 2, rest // 2), (rest // 2, rest - rest // 2)}
    return [
        PipelineSplit(pp, None, first, last)
        for first, last in sorted(pairs, reverse=True)
        if 1 <= first < middle and 1 <= last < middle
    ]


def _context_sizes(model: ModelShape, forced: int | None, *, transformer_engine: bool) -> list[int]:
    def valid(cp: int) -> bool:
        return cp == 1 or model.seq_length % (2 * cp) == 0

    if model.window_size is not None and model.window_size < model.seq_length:
        if forced not in (None, 1):
            raise PromotionError(
                f"context parallel size {forced} is invalid with sliding-window attention "
                f"(window {model.window_size}): "
                "Transformer Engine's ring-exchange context parallelism, megatron-core's default, takes no window"
            )
        return [1]
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


class _Sized(NamedTuple):
    """A layout and its memory, before its step time."""

    parallelism: Parallelism
    data_parallel: int
    memory: Memory


def _sized(
    model: ModelShape,
    cluster: Cluster,
    assumptions: Assumptions,
    global_batch_size: int,
    shape: Shape,
    recompute: Recompute,
) -> _Sized:
    tp, split, dp = shape.tensor, shape.split, shape.data
    par = Parallelism(
        tensor=tp,
        pipeline=split.pipeline,
        virtual_pipeline=split.virtual,
        context=shape.context,
        expert=shape.expert,
        expert_tensor=shape.expert_tensor,
        first_stage_layers=split.first,
        last_stage_layers=split.last,
        data=dp,
        micro_batch_size=shape.micro_batch,
        global_batch_size=global_batch_size,
        sequence_parallel=tp > 1 and cluster.transformer_engine,
        recompute=recompute,
        ddp_bucket_size=ddp_bucket_size(dp),
    )
    memory = memory_per_gpu(model, par, data_parallel=dp, reserve_gb=assumptions.memory_reserve_gb)
    return _Sized(par, dp, memory)


def _timed(model: ModelShape, cluster: Cluster, assumptions: Assumptions, sized: _Sized) -> RankedLayout:
    par, dp = sized.parallelism, sized.data_parallel
    step = step_time(model, par, data_parallel=dp, cluster=cluster, assumptions=assumptions)
    return RankedLayout(parallelism=par, data_parallel=dp, memory=sized.memory, step=step)
