"""Predicted time of one optimizer step of a layout: compute, pipeline bubble and exposed communication.

compute = executed FLOPs per GPU / (peak bf16 x MFU), where executed FLOPs are the model FLOPs
(counts.model_flops_per_token) plus recomputation: full recomputation repeats every forward (+1/3),
selective repeats the attention core's forward (+1/3 of the attention FLOPs).
imbalance = the pipeline moves at the pace of its slowest stage. Megatron splits the layers evenly
          over the stages (the plan keeps that split: no --decoder-last-pipeline-num-layers), and the
          last stage also runs the output layer, 6 x vocab x hidden FLOPs per token, so each of the
          other PP - 1 stages idles that long: (PP - 1) x output-layer FLOPs / (peak x MFU) per GPU.
bubble  = (compute + imbalance) x (PP - 1) / (VPP x microbatches)   (Narayanan et al. 2021, section 2.2).
Communication, ring collectives moving (n-1)/n of a buffer per GPU at the link's bandwidth per
direction; a group is on NVLink while it fits in a node, on the network otherwise (Megatron's
rank order is TP, CP, DP, PP from the innermost):
  TP: with sequence parallelism 4 all-gathers/reduce-scatters of a microbatch's (s/CP) x h bf16
      activations per layer forward and 4 backward (+4 with full recomputation); not overlapped
      (Megatron's --tp-comm-overlap needs Transformer Engine userbuffers, which the plan leaves off).
  CP: ring attention passes K and V around the CP group (cp-1) times forward, K, V and their
      gradients backward; megatron-core overlaps it with the attention compute (causal: half the
      non-causal count), so only what that compute cannot hide counts.
  DP: the distributed optimizer's fp32 gradient reduce-scatter and bf16 parameter all-gather over
      DP x CP; overlapped (--overlap-grad-reduce, --overlap-param-gather) with the last microbatch's
      backward and the first microbatch's forward, so only what they cannot hide counts.
  PP: one activation send and one gradient send per microbatch and model chunk; all counted.
"""

from __future__ import annotations

from sweep.promote.assumptions import Assumptions
from sweep.promote.clusters import Cluster
from sweep.promote.counts import (
    attention_flops_per_token,
    embedding_params,
    kv_width,
    layer_matrix_params,
    layer_norm_params,
    model_flops_per_token,
    output_layer_flops_per_token,
)
from sweep.promote.memory import BYTES_MAIN_GRAD, BYTES_WEIGHT
from train_entry.config import StrictConfig
from train_entry.megatron.config import ModelShape, Parallelism

BYTES_ACTIVATION = 2
"""bf16 activations on the wire."""


class StepTime(StrictConfig):
    """Seconds per optimizer step, by cause."""

    compute_s: float
    imbalance_s: float
    """Waiting for the last pipeline stage, which runs the output layer besides its share of layers."""
    bubble_s: float
    tp_comm_s: float
    cp_comm_s: float
    """Exposed (not hidden behind the attention compute)."""
    dp_comm_s: float
    """Exposed (not hidden behind the first forward and last backward)."""
    pp_comm_s: float
    total_s: float


def step_time(
    model: ModelShape, par: Parallelism, *, data_parallel: int, cluster: Cluster, assumptions: Assumptions
) -> StepTime:
    tp, pp, cp = par.tensor, par.pipeline, par.context
    vpp = par.virtual_pipeline or 1
    gpus = tp * pp * cp * data_parallel
    microbatches = par.global_batch_size // (par.micro_batch_size * data_parallel)
    rate = cluster.peak_bf16_tflops * 1e12 * assumptions.mfu

    tokens_per_step = par.global_batch_size * model.seq_length
    attention = attention_flops_per_token(model)
    recompute = {"none": 0.0, "selective": attention / 3, "full": model_flops_per_token(model) / 3}[par.recompute]
    compute = (model_flops_per_token(model) + recompute) * tokens_per_step / gpus / rate
    imbalance = (pp - 1) * output_layer_flops_per_token(model) * tokens_per_step / gpus / rate
    bubble = (compute + imbalance) * (pp - 1) / (vpp * microbatches)

    def bandwidth(group_span: int) -> float:
        """Bytes/s per GPU of a group whose members lie `group_span` consecutive ranks apart at most."""
        fits_node = group_span <= cluster.gpus_per_node
        return (cluster.intra_node_gb_per_s if fits_node else cluster.inter_node_gb_per_s) * 1e9

    def ring(buffer_bytes: float, size: int, group_span: int) -> float:
        return 0.0 if size == 1 else buffer_bytes * (size - 1) / size / bandwidth(group_span)

    layers = model.num_layers // pp
    micro_tokens = par.micro_batch_size * model.seq_length / cp
    activation = micro_tokens * model.hidden_size * BYTES_ACTIVATION
    tp_ops = 8 + (4 if par.recompute == "full" else 0)
    tp_comm = layers * microbatches * tp_ops * ring(activation, tp, tp)

    # K and V of this GPU's sequence chunk (its TP share of the key/value heads), around the ring.
    kv_chunk = micro_tokens * 2 * kv_width(model) / tp * BYTES_ACTIVATION
    cp_volume = (cp - 1) * kv_chunk * 3  # forward: K, V; backward: K, V and dK, dV
    cp_bw = bandwidth(tp * cp)
    # Flash attention skips the causal mask's upper half: the time there is to hide behind is half
    # of what the (non-causal) model-FLOPs convention counts.
    attention_compute = attention / 2 * tokens_per_step / gpus / rate
    cp_comm = max(0.0, layers * microbatches * cp_volume / cp_bw - attention_compute) if cp > 1 else 0.0

    stage_params = layers * (layer_matrix_params(model) / tp + layer_norm_params(model)) + embedding_params(model) / tp
    shards = data_parallel * cp
    one_microbatch = compute / microbatches
    reduce_scatter = ring(stage_params * BYTES_MAIN_GRAD, shards, tp * cp * data_parallel)
    all_gather = ring(stage_params * BYTES_WEIGHT, shards, tp * cp * data_parallel)
    dp_comm = max(0.0, reduce_scatter - one_microbatch * 2 / 3) + max(0.0, all_gather - one_microbatch / 3)

    pp_message = activation / tp  # sequence parallel: each TP rank sends its shard
    # Adjacent stages are TP x CP x DP ranks apart: one node holds both only when that gap is within it.
    pp_comm = 2 * microbatches * vpp * pp_message / bandwidth(tp * cp * data_parallel + 1) if pp > 1 else 0.0

    total = compute + imbalance + bubble + tp_comm + cp_comm + dp_comm + pp_comm
    return StepTime(
        compute_s=compute,
        imbalance_s=imbalance,
        bubble_s=bubble,
        tp_comm_s=tp_comm,
        cp_comm_s=cp_comm,
        dp_comm_s=dp_comm,
        pp_comm_s=pp_comm,
        total_s=total,
    )
