"""The memory and step-time models on a model small enough to work out by hand."""

import pytest

from sweep.promote.estimate.assumptions import Assumptions
from sweep.promote.estimate.clusters import PRESETS as CLUSTERS
from sweep.promote.estimate.clusters import Cluster
from sweep.promote.estimate.counts import model_flops_per_token, output_layer_flops_per_token
from sweep.promote.estimate.layout import LayoutRequest, search_layouts
from sweep.promote.estimate.memory import memory_per_gpu
from sweep.promote.estimate.step_time import step_time
from sweep.promote.plan.summary import NEAR_TIE
from sweep.target.families.registry import PRESETS
from train_entry.megatron.config import ModelShape, Parallelism

# d = 16, key/value width 32; a layer's matrices: 2*64*64 + 2*64*32 + 3*64*128 = 36864; norms 128;
# embedding 256*64 = 16384; activations per token and layer: 12*64 + 4*32 + 6*128 = 1664 bytes.
SMALL = ModelShape(
    num_layers=4, hidden_size=64, ffn_hidden_size=128, num_attention_heads=4, num_query_groups=2,
    vocab_size=256, seq_length=32,
)  # fmt: skip
CLUSTER = Cluster(
    name="toy", nodes=1, gpus_per_node=8, gpu_memory_gb=80, peak_bf16_tflops=1.0,
    intra_node_gb_per_s=100.0, inter_node_gb_per_s=10.0,
)  # fmt: skip


def layout(**overrides) -> Parallelism:
    values = {"tensor": 2, "pipeline": 2, "context": 1, "micro_batch_size": 1, "global_batch_size": 8}
    values.update(overrides)
    return Parallelism(sequence_parallel=values["tensor"] > 1, **values)


def test_memory_of_the_first_stage_worked_out_by_hand():
    memory = memory_per_gpu(SMALL, layout(), data_parallel=2, reserve_gb=1.0)
    # First stage: 2 layers x (36864/2 + 128) + embedding 16384/2 = 45312 parameters.
    assert memory.stage == "first"
    assert memory.params_billion * 1e9 == pytest.approx(45312)
    assert memory.weights_gb * 1e9 == pytest.approx(45312 * 2)
    assert memory.gradients_gb * 1e9 == pytest.approx(45312 * 4)
    assert memory.optimizer_gb * 1e9 == pytest.approx(45312 * 12 / 2)  # sharded over DP 2 x CP 1
    # 32 tokens x 1664 B / TP 2 per layer, 2 layers, min(PP 2, 4 microbatches) in flight.
    assert memory.activations_gb * 1e9 == pytest.approx(32 * 1664 / 2 * 2 * 2)
    assert memory.total_gb == pytest.approx((45312 * 12 + 106496) / 1e9 + 1.0)


def test_with_four_stages_the_first_holds_four_microbatches_and_outweighs_the_logits():
    memory = memory_per_gpu(SMALL, layout(pipeline=4, tensor=1), data_parallel=2, reserve_gb=0)
    # First: 1 layer + embedding = 53376 parameters, 4 microbatches x 32 x 1664 B = 212992 B; the last
    # (53440 parameters, 1 microbatch + 32 x 4 x (64 + 256) B of logits = 94208 B) needs less.
    assert memory.stage == "first"
    assert memory.total_gb * 1e9 == pytest.approx(53376 * 12 + 212992)


def test_optimizer_states_shard_over_data_and_context_parallel():
    base = memory_per_gpu(SMALL, layout(), data_parallel=2, reserve_gb=0)
    wider = memory_per_gpu(SMALL, layout(), data_parallel=4, reserve_gb=0)
    with_cp = memory_per_gpu(SMALL, layout(context=2), data_parallel=2, reserve_gb=0)
    assert wider.optimizer_gb == pytest.approx(base.optimizer_gb / 2)
    assert with_cp.optimizer_gb == pytest.approx(base.optimizer_gb / 2)
    assert with_cp.activations_gb == pytest.approx(base.activations_gb / 2)  # each GPU holds half the sequence


def test_full_recompute_keeps_layer_inputs_and_one_layer_while_it_is_recomputed():
    full = memory_per_gpu(SMALL, layout(recompute="full"), data_parallel=2, reserve_gb=0)
    # The last stage now needs the most: 2 layer inputs of 32 tokens x 2h / TP, one layer's full
    # activations while it is recomputed, and 32 x 4 x (64 + 256) / TP bytes of logits.
    assert full.stage == "last"
    assert full.activations_gb * 1e9 == pytest.approx(2 * 32 * 2 * 64 / 2 + 32 * 1664 / 2 + 32 * 4 * 320 / 2)


def test_selective_recompute_drops_the_mlps_activations_not_the_attentions():
    # The recomputed MLP keeps its input only: 6f = 768 of the layer's 1664 bytes per token go; flash attention
    # stores no scores, so there is nothing of the attention core to drop.
    selective = memory_per_gpu(SMALL, layout(recompute="selective"), data_parallel=2, reserve_gb=0)
    assert selective.activations_gb * 1e9 == pytest.approx(32 * (1664 - 6 * 128) / 2 * 2 * 2)
    plain = step_time(SMALL, layout(), data_parallel=2, cluster=CLUSTER, assumptions=Assumptions(mfu=0.5))
    step = step_time(
        SMALL, layout(recompute="selective"), data_parallel=2, cluster=CLUSTER, assumptions=Assumptions(mfu=0.5)
    )
    # The MLPs' forward again: 2 x 3 x 64 x 128 FLOPs per token and layer, 4 layers, 8 x 32 tokens over 8 GPUs;
    # and with sequence parallelism its all-gather and reduce-scatter again: 10 collectives per layer instead of 8.
    assert step.compute_s - plain.compute_s == pytest.approx(2 * 3 * 64 * 128 * 4 * 8 * 32 / 8 / 0.5e12)
    assert step.tp_comm_s == pytest.approx(plain.tp_comm_s * 10 / 8)


def test_without_sequence_parallelism_the_norm_and_linear_inputs_stay_whole_on_every_tp_rank():
    par = Parallelism(tensor=2, pipeline=2, micro_batch_size=1, global_batch_size=8)  # sequence_parallel off
    memory = memory_per_gpu(SMALL, par, data_parallel=2, reserve_gb=0)
    # 8h = 512 bytes per token whole, the other 1152 split over TP 2 (Korthikanti et al., table 2).
    assert memory.activations_gb * 1e9 == pytest.approx(32 * (512 + 1152 / 2) * 2 * 2)


def test_interleaving_holds_more_microbatches_on_the_first_stage():
    plain = memory_per_gpu(SMALL, layout(), data_parallel=2, reserve_gb=0)
    interleaved = memory_per_gpu(SMALL, layout(virtual_pipeline=2), data_parallel=2, reserve_gb=0)
    # PP x (1 + (PP-1)/(PP x VPP)) = 2 x 1.25 = 2.5 microbatches instead of 2.
    assert interleaved.activations_gb == pytest.approx(plain.activations_gb * 2.5 / 2)


def test_step_compute_and_bubble_follow_the_stated_formulas():
    par = layout()
    step = step_time(SMALL, par, data_parallel=2, cluster=CLUSTER, assumptions=Assumptions(mfu=0.5))
    flops = model_flops_per_token(SMALL) * 8 * 32 / 8  # global batch tokens over 8 GPUs
    assert step.compute_s == pytest.approx(flops / 0.5e12)
    # The last of the 2 stages also runs the output layer: the other stage waits that long.
    assert step.imbalance_s == pytest.approx(output_layer_flops_per_token(SMALL) * 8 * 32 / 8 / 0.5e12)
    # (PP-1)/(VPP x microbatches) of the stage time, which the last stage sets.
    assert step.bubble_s == pytest.approx((step.compute_s + step.imbalance_s) * (2 - 1) / 4)
    assert step.total_s == pytest.approx(
        step.compute_s
        + step.imbalance_s
        + step.bubble_s
        + step.tp_comm_s
        + step.cp_comm_s
        + step.dp_comm_s
        + step.pp_comm_s
    )
    # TP on NVLink: 8 collectives per layer and microbatch, each moving half of 32 x 64 x 2 bytes.
    assert step.tp_comm_s == pytest.approx(2 * 4 * 8 * (32 * 64 * 2 / 2) / 100e9)


def test_no_pipeline_no_bubble_and_no_tensor_parallel_no_tp_traffic():
    step = step_time(SMALL, layout(tensor=1, pipeline=1), data_parallel=8, cluster=CLUSTER, assumptions=Assumptions())
    assert (step.imbalance_s, step.bubble_s, step.tp_comm_s, step.pp_comm_s, step.cp_comm_s) == (0, 0, 0, 0, 0)


def test_recomputation_costs_compute():
    plain = step_time(SMALL, layout(), data_parallel=2, cluster=CLUSTER, assumptions=Assumptions())
    full = step_time(SMALL, layout(recompute="full"), data_parallel=2, cluster=CLUSTER, assumptions=Assumptions())
    assert full.compute_s == pytest.approx(plain.compute_s * 4 / 3)


def test_70b_compute_per_step_at_the_cited_mfu():
    # 6 x 69.5 B matmul parameters + 12 x 80 x 8192 x 8192 = 481.4 GFLOP per token, 11.8 M tokens, 480 GPUs at 43 %.
    model = PRESETS["llama3.1-70b"].model
    assert model_flops_per_token(model) / 1e9 == pytest.approx(481.43, abs=0.01)
    par = Parallelism(tensor=8, pipeline=4, context=1, global_batch_size=1440, sequence_parallel=True)
    step = step_time(model, par, data_parallel=15, cluster=CLUSTERS["h100-480"], assumptions=Assumptions())
    assert step.compute_s == pytest.approx(481.43e9 * 1440 * 8192 / 480 / (989e12 * 0.43), rel=1e-4)


def test_nvidias_published_70b_layout_is_within_the_near_tie_band_of_the_chosen_one():
    # NeMo's Llama 3 70B pretraining recipe (nemo/collections/llm/recipes/llama3_70b.py, sequence
    # 8192): TP 4 x PP 4 (VPP 5) x CP 2, sequence parallel, micro-batch 1. On 480 H100s that is DP 15.
    model = PRESETS["llama3.1-70b"].model
    search = search_layouts(
        model, CLUSTERS["h100-480"], global_batch_size=1440, request=LayoutRequest(), assumptions=Assumptions()
    )
    nemo = next(
        layout
        for layout in search.ranked
        if (layout.parallelism.tensor, layout.parallelism.pipeline, layout.parallelism.virtual_pipeline) == (4, 4, 5)
        and (layout.parallelism.context, layout.parallelism.micro_batch_size, layout.parallelism.recompute)
        == (2, 1, "none")
    )
    assert nemo.step.total_s <= search.ranked[0].step.total_s * (1 + NEAR_TIE)
    # A 20-stage pipeline waits 19 output layers' time per step: it no longer wins on paper.
    assert search.ranked[0].parallelism.pipeline <= 4
