"""The layout search: every layout it returns obeys Megatron's constraints and fits; requests that
break a constraint fail naming it."""

import pytest

from sweep.promote.errors import PromotionError
from sweep.promote.estimate.assumptions import Assumptions
from sweep.promote.estimate.clusters import PRESETS as CLUSTERS
from sweep.promote.estimate.clusters import Cluster
from sweep.promote.estimate.layout import LayoutRequest, search_layouts
from sweep.target.families.registry import PRESETS as TARGETS

H100 = CLUSTERS["h100-480"]


def search(target="llama3.1-70b", cluster=H100, global_batch_size=1440, **request):
    return search_layouts(
        TARGETS[target].model,
        cluster,
        global_batch_size=global_batch_size,
        request=LayoutRequest(**request),
        assumptions=Assumptions(),
    )


def cluster_of(gpus_per_node: int, nodes: int = 60) -> Cluster:
    return H100.model_copy(update={"name": f"x{gpus_per_node}", "gpus_per_node": gpus_per_node, "nodes": nodes})


@pytest.mark.parametrize("target", ["llama3.1-8b", "llama3.1-70b"])
def test_every_layout_found_obeys_megatrons_constraints_and_fits(target):
    model = TARGETS[target].model
    result = search(target)
    assert result.ranked and result.considered >= len(result.ranked)
    for layout in result.ranked:
        par, dp = layout.parallelism, layout.data_parallel
        vpp = par.virtual_pipeline or 1
        microbatches = par.global_batch_size // (par.micro_batch_size * dp)
        assert par.tensor <= H100.gpus_per_node
        assert model.num_attention_heads % par.tensor == 0 and model.num_query_groups % par.tensor == 0
        stages = par.stage_layers(model.num_layers)
        assert sum(stages) == model.num_layers and len(stages) == par.pipeline
        if par.first_stage_layers is None and par.last_stage_layers is None:
            assert model.num_layers % (par.pipeline * vpp) == 0
        else:  # Megatron-LM's uneven stages: equal middle shares, first and last no fuller, no interleaving
            assert vpp == 1 and len(set(stages[1:-1])) <= 1 and max(stages[0], stages[-1]) <= max(stages)
        assert par.tensor * par.pipeline * par.context * dp == H100.gpus
        assert par.global_batch_size % (par.micro_batch_size * dp) == 0
        assert par.context == 1 or model.seq_length % (2 * par.context) == 0
        assert vpp == 1 or (microbatches % par.pipeline == 0 and microbatches >= par.pipeline)
        assert par.sequence_parallel == (par.tensor > 1)
        assert layout.memory.total_gb <= H100.gpu_memory_gb
    steps = [layout.step.total_s for layout in result.ranked]
    assert steps == sorted(steps)


def test_forced_parts_are_kept():
    result = search(tensor=8, pipeline=4, virtual_pipeline=5, context=1, micro_batch_size=1, recompute="none")
    assert len(result.ranked) == 1
    par = result.ranked[0].parallelism
    assert (par.tensor, par.pipeline, par.virtual_pipeline, par.context, result.ranked[0].data_parallel) == (
        8,
        4,
        5,
        1,
        15,
    )


def test_405b_needs_recomputation_on_480_h100s():
    result = search("llama3.1-405b")
    assert {layout.parallelism.recompute for layout in result.ranked} == {"full"}


@pytest.mark.parametrize(
    ("request_", "cluster", "message"),
    [
        (
            {"tensor": 8},
            cluster_of(7),
            r"tensor parallel size 8 is invalid: TP must not exceed the GPUs per node \(7\)",
        ),
        ({"tensor": 3}, H100, r"tensor parallel size 3 is invalid: TP must divide the attention heads \(64\)"),
        ({"pipeline": 81}, H100, r"pipeline parallel size 81 is invalid: PP must not exceed the layers \(80\)"),
        ({"pipeline": 4, "virtual_pipeline": 3}, H100, r"virtual pipeline size 3 is invalid: PP x VPP must divide"),
        ({"context": 3}, H100, r"context parallel size 3 is invalid: 2 x CP must divide the sequence length \(8192\)"),
        ({"tensor": 8, "pipeline": 16}, H100, r"no layout has TP x PP x CP x DP = 480 GPUs"),
    ],
)
def test_a_request_that_breaks_a_constraint_names_it(request_, cluster, message):
    with pytest.raises(PromotionError, match=message):
        search(cluster=cluster, **request_)


def test_an_indivisible_global_batch_names_the_batch_constraint():
    with pytest.raises(PromotionError, match=r"global batch size 1441 sequences is not a multiple of micro-batch x DP"):
        # PP pinned: without it a 15-stage uneven pipeline at DP 1 takes any global batch.
        search(global_batch_size=1441, pipeline=4)


def test_a_model_that_fits_no_layout_says_how_much_the_smallest_needs():
    with pytest.raises(
        PromotionError, match=r"fits no layout in 80 GB per GPU on 8 GPUs: the least memory .* is \d+\.\d GB"
    ):
        search("llama3.1-405b", cluster=cluster_of(8, nodes=1))


@pytest.mark.parametrize(("nodes", "memory_gb"), [(32, 80), (32, 141)])
def test_405b_on_256_gpus_plans_with_fewer_layers_on_the_first_and_last_stages(nodes, memory_gb):
    """126 layers split evenly only over PP 1, 2, 3, 6, 7, ...: on 256 GPUs only PP 1 and 2, which fit no layout."""
    cluster = H100.model_copy(update={"nodes": nodes, "gpu_memory_gb": memory_gb})
    result = search("llama3.1-405b", cluster=cluster)
    chosen = result.ranked[0].parallelism
    assert chosen.pipeline in (4, 8, 16, 32) and chosen.virtual_pipeline is None
    stages = chosen.stage_layers(126)
    assert stages[0] == stages[-1] == max(stages) - 1  # Meta's split: one layer fewer at each end
    pinned = search("llama3.1-405b", cluster=cluster, pipeline=16).ranked[0].parallelism
    assert pinned.stage_layers(126) == [7] + [8] * 14 + [7]


def test_an_moe_target_splits_its_experts_and_a_dense_one_refuses_expert_parallelism():
    result = search("mixtral-8x7b")
    assert {layout.parallelism.expert for layout in result.ranked} <= {1, 2, 4, 8}
    for layout in result.ranked:
        par = layout.parallelism
        assert (par.tensor * par.context * layout.data_parallel) % (par.expert * (par.expert_tensor or par.tensor)) == 0
        assert par.expert == 1 or par.tensor == 1 or par.sequence_parallel
    assert search("mixtral-8x7b", expert=4).ranked[0].parallelism.expert == 4
    with pytest.raises(PromotionError, match=r"expert parallel size 3 is invalid: EP must divide the experts \(8\)"):
        search("mixtral-8x7b", expert=3)
    with pytest.raises(PromotionError, match="expert parallel size 2 is invalid: the target has no experts"):
        search(expert=2)


def test_a_sliding_window_keeps_context_parallelism_at_1():
    assert {layout.parallelism.context for layout in search("mistral-7b").ranked} == {1}
    with pytest.raises(PromotionError, match="context parallel size 2 is invalid with sliding-window attention"):
        search("mistral-7b", context=2)
