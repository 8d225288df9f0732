"""Predicted time of one optimizer step of a layout: compute, pipeline bubble and exposed communication.

compute = executed FLOPs per GPU / (peak bf16 x MFU), where executed FLOPs are the model FLOPs
(counts.model_flops_per_token) plus recomputation: full recomputation repeats every forward (+1/3),
selective repeats the MLPs' forward (+1/3 of the MLP FLOPs; flash attention is never recomputed).
imbalance = the pipeline moves at the pace of its slowest stage. Megatron splits the layers evenly
          over the stages (the plan keeps that split: no --decoder-last-pipeline-num-layers), and the
          last stage also runs the output layer, 6 x vocab x hidden FLOPs per token, so each of the
          other PP - 1 stages idles that long: (PP - 1) x output-layer FLOPs / (peak x MFU) per GPU.
bubble  = (compute + imbalance) x (PP - 1) / (VPP x microbatches)   (Narayanan et al. 2021, section 2.2).
Communication, ring collectives moving (n-1)/n of a buffer per GPU at the link's bandwidth per
direction; a group is on NVLink while it fits in a node, on the network otherwise (Megatron's
rank order is TP, CP, DP, PP from the innermost):
  TP: with sequence parallelism 4 all-gathers/reduce-scatters of a microbatch's (s/CP) x h bf16
      activations per layer forward and 4 backward (+4 with full recomputation, +2 with selective's
      recomputed MLP); without it, 2 all-reduces forward and 2 backward, the same volume; not overlapped
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
    mlp_flops_per_token,
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
    """Seconds per optimizer step of `par` on `cluster`, by cause (the module docstring gives each formula)."""
    pp, vpp = par.pipeline, par.virtual_pipeline or 1
    gpus = par.tensor * pp * par.context * data_parallel
    microbatches = par.global_batch_size // (par.micro_batch_size * data_parallel)
    rate = cluster.peak_bf16_tflops * 1e12 * assumptions.mfu
    tokens_per_step = par.global_batch_size * model.seq_length

    def seconds(flops_per_token: float) -> float:
        """Time for every GPU to run its share of `flops_per_token` over the step's tokens at the assumed MFU."""
        return flops_per_token * tokens_per_step / gpus / rate

    compute = seconds(model_flops_per_token(model) + _recompute_flops_per_token(model, par))
    imbalance = seconds((pp - 1) * output_layer_flops_per_token(model))
    bubble = (compute + imbalance) * (pp - 1) / (vpp * microbatches)
    # Flash attention skips the causal mask's upper half: the time there is to hide behind is half
    # of what the (non-causal) model-FLOPs convention counts.
    attention_compute = seconds(attention_flops_per_token(model) / 2)

    tp_comm = _tp_comm(model, par, cluster, microbatches=microbatches)
    cp_comm = _cp_comm(model, par, cluster, microbatches=microbatches, hidden_by=attention_compute)
    dp_comm = _dp_comm(model, par, cluster, data_parallel=data_parallel, one_microbatch=compute / microbatches)
    pp_comm = _pp_comm(model, par, cluster, data_parallel=data_parallel, microbatches=microbatches)
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


def _recompute_flops_per_token(model: ModelShape, par: Parallelism) -> float:
    """Forward FLOPs run again in the backward: the MLPs' (selective) or the whole model's (full)."""
    if par.recompute == "selective":
        return mlp_flops_per_token(model) / 3
    if par.recompute == "full":
        return model_flops_per_token(model) / 3
    return 0.0


def _tp_comm(model: ModelShape, par: Parallelism, cluster: Cluster, *, microbatches: int) -> float:
    """Sequence parallelism's all-gathers and reduce-scatters (or, without it, the all-reduces of the same volume):
    4 forward and 4 backward per layer and microbatch, 4 more with full recomputation, 2 with selective's MLP;
    none of them overlapped."""
    tp_ops = 8 + {"none": 0, "selective": 2, "full": 4}[par.recompute]
    layers = model.num_layers // par.pipeline
    return layers * microbatches * tp_ops * _ring(cluster, _activation_bytes(model, par), par.tensor, par.tensor)


def _cp_comm(model: ModelShape, par: Parallelism, cluster: Cluster, *, microbatches: int, hidden_by: float) -> float:
    """Ring attention's exposed time: its K and V traffic less the attention compute (`hidden_by`, s) it overlaps."""
    tp, cp = par.tensor, par.context
    if cp == 1:
        return 0.0
    # K and V of this GPU's sequence chunk (its TP share of the key/value heads), around the ring.
    kv_chunk = _micro_tokens(model, par) * 2 * kv_width(model) / tp * BYTES_ACTIVATION
    cp_volume = (cp - 1) * kv_chunk * 3  # forward: K, V; backward: K, V and dK, dV
    layers = model.num_layers // par.pipeline
    return max(0.0, layers * microbatches * cp_volume / _bandwidth(cluster, tp * cp) - hidden_by)


def _dp_comm(
    model: ModelShape, par: Parallelism, cluster: Cluster, *, data_parallel: int, one_microbatch: float
) -> float:
    """The distributed optimizer's exposed time: its gradient reduce-scatter less the last microbatch's
    backward (2/3 of `one_microbatch`, s), its parameter all-gather less the first one's forward (1/3)."""
    tp, cp = par.tensor, par.context
    layers = model.num_layers // par.pipeline
    stage_params = layers * (layer_matrix_params(model) / tp + layer_norm_params(model)) + embedding_params(model) / tp
    shards = data_parallel * cp
    reduce_scatter = _ring(cluster, stage_params * BYTES_MAIN_GRAD, shards, tp * cp * data_parallel)
    all_gather = _ring(cluster, stage_params * BYTES_WEIGHT, shards, tp * cp * data_parallel)
    return max(0.0, reduce_scatter - one_microbatch * 2 / 3) + max(0.0, all_gather - one_microbatch / 3)


def _pp_comm(model: ModelShape, par: Parallelism, cluster: Cluster, *, data_parallel: int, microbatches: int) -> float:
    """One activation send and one gradient send per microbatch and model chunk, all counted."""
    if par.pipeline == 1:
        return 0.0
    tp, cp, vpp = par.tensor, par.context, par.virtual_pipeline or 1
    pp_message = _activation_bytes(model, par) / tp  # sequence parallel: each TP rank sends its shard
    # Adjacent stages are TP x CP x DP ranks apart: one node holds both only when that gap is within it.
    return 2 * microbatches * vpp * pp_message / _bandwidth(cluster, tp * cp * data_parallel + 1)


def _micro_tokens(model: ModelShape, par: Parallelism) -> float:
    """Tokens of one microbatch on one GPU: its share of the sequence under context parallelism."""
    return par.micro_batch_size * model.seq_length / par.context


def _activation_bytes(model: ModelShape, par: Parallelism) -> float:
    """One microbatch's hidden states on one GPU, in bf16."""
    return _micro_tokens(model, par) * model.hidden_size * BYTES_ACTIVATION


def _bandwidth(cluster: Cluster, group_span: int) -> float:
    """Bytes/s per GPU of a group whose members lie `group_span` consecutive ranks apart at most."""
    fits_node = group_span <= cluster.gpus_per_node
    return (cluster.intra_node_gb_per_s if fits_node else cluster.inter_node_gb_per_s) * 1e9


def _ring(cluster: Cluster, buffer_bytes: float, size: int, group_span: int) -> float:
    """Seconds of a ring collective over `size` GPUs: each moves (size - 1) / size of the buffer."""
    return 0.0 if size == 1 else buffer_bytes * (size - 1) / size / _bandwidth(cluster, group_span)
