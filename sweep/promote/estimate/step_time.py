"""Predicted time of one optimizer step of a layout: compute, pipeline bubble and exposed communication.

compute = executed FLOPs per GPU / (peak bf16 x MFU), where executed FLOPs are the model FLOPs
(counts.model_flops_per_token) plus recomputation: full recomputation repeats every forward (+1/3),
selective repeats the MLPs' forward (+1/3 of the MLP FLOPs; flash attention is never recomputed).
imbalance = the pipeline moves at the pace of its slowest stage: PP x the time of the stage with the most FLOPs
          (its layers, and on the last stage the output layer, 6 x vocab x hidden FLOPs per token) less the
          mean over stages that `compute` is. With an even split the last stage is the slowest and the other
          PP - 1 stages idle an output layer's time; fewer layers on the last stage
          (--decoder-last-pipeline-num-layers) can take that back.
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
  EP: a mixture-of-experts layer's all-to-all dispatch and combine of each token's k routed copies, forward and
      backward (2 more where the layer is recomputed), each GPU sending (EP-1)/EP of them, over the EP group
      (ranks ETP apart, so on NVLink while ETP x EP fits in a node); and with expert-tensor parallelism the
      routed copies' all-gather and reduce-scatter over ETP. Not overlapped (megatron-core's all-to-all
      overlap needs its own schedule, which the plan leaves off); routing imbalance is not modelled (the
      router's load-balancing loss keeps the experts near even).
Stages run the most layers of parallelism.stage_layers; an MoE model's expert gradients are reduced over the
expert-data-parallel group, TP x CP x DP / (EP x ETP), its dense ones over DP x CP.
"""

from __future__ import annotations

from sweep.promote.estimate.assumptions import Assumptions
from sweep.promote.estimate.clusters import Cluster
from sweep.promote.estimate.counts import (
    attention_flops_per_token,
    layer_flops_per_token,
    layer_params_on_rank,
    mlp_flops_per_token,
    model_flops_per_token,
    output_layer_flops_per_token,
)
from sweep.promote.estimate.memory import BYTES_MAIN_GRAD, BYTES_WEIGHT, expert_tensor
from sweep.scale import embedding_params, kv_width
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
    ep_comm_s: float = 0.0
    """An MoE layer's all-to-all and expert-tensor collectives; 0 for a dense model."""
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
    imbalance = max(0.0, pp * seconds(_slowest_stage_flops_per_token(model, par)) - compute)
    bubble = (compute + imbalance) * (pp - 1) / (vpp * microbatches)
    # Flash attention skips the causal mask's upper half: the time there is to hide behind is half
    # of what the (non-causal) model-FLOPs convention counts.
    attention_compute = seconds(attention_flops_per_token(model) / 2)

    tp_comm = _tp_comm(model, par, cluster, microbatches=microbatches)
    cp_comm = _cp_comm(model, par, cluster, microbatches=microbatches, hidden_by=attention_compute)
    dp_comm = _dp_comm(model, par, cluster, data_parallel=data_parallel, one_microbatch=compute / microbatches)
    pp_comm = _pp_comm(model, par, cluster, data_parallel=data_parallel, microbatches=microbatches)
    ep_comm = _ep_comm(model, par, cluster, microbatches=microbatches)
    total = compute + imbalance + bubble + tp_comm + cp_comm + dp_comm + pp_comm + ep_comm
    return StepTime(
        compute_s=compute,
        imbalance_s=imbalance,
        bubble_s=bubble,
        tp_comm_s=tp_comm,
        cp_comm_s=cp_comm,
        dp_comm_s=dp_comm,
        pp_comm_s=pp_comm,
        ep_comm_s=ep_comm,
        total_s=total,
    )


def _slowest_stage_flops_per_token(model: ModelShape, par: Parallelism) -> float:
    """FLOPs per token of the pipeline stage with the most: its layers (with what recomputation repeats of them),
    and on the last stage the output layer."""
    stages = par.stage_layers(model.num_layers)
    per_layer = layer_flops_per_token(model) + _recompute_flops_per_token(model, par) / model.num_layers
    output = output_layer_flops_per_token(model)
    return max(
        layers * per_layer + (output if index == len(stages) - 1 else 0.0) for index, layers in enumerate(stages)
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
    2 forward and 2 backward per layer and microbatch for the attention, 2 more with full recomputation, and as
    many for a dense MLP, 2 more with either recomputation; none of them overlapped. An MoE layer's TP traffic
    is its expert-tensor collectives, counted in _ep_comm."""
    attention_ops = 4 + (2 if par.recompute == "full" else 0)
    mlp_ops = 0 if model.moe is not None else 4 + (2 if par.recompute != "none" else 0)
    layers = max(par.stage_layers(model.num_layers))
    one = _ring(cluster, _activation_bytes(model, par), par.tensor, par.tensor)
    return layers * microbatches * (attention_ops + mlp_ops) * one


def _cp_comm(model: ModelShape, par: Parallelism, cluster: Cluster, *, microbatches: int, hidden_by: float) -> float:
    """Ring attention's exposed time: its K and V traffic less the attention compute (`hidden_by`, s) it overlaps."""
    tp, cp = par.tensor, par.context
    if cp == 1:
        return 0.0
    # K and V of this GPU's sequence chunk (its TP share of the key/value heads), around the ring.
    kv_chunk = _micro_tokens(model, par) * 2 * kv_width(model) / tp * BYTES_ACTIVATION
    cp_volume = (cp - 1) * kv_chunk * 3  # forward: K, V; backward: K, V and dK, dV
    layers = max(par.stage_layers(model.num_layers))
    return max(0.0, layers * microbatches * cp_volume / _bandwidth(cluster, tp * cp) - hidden_by)


def _dp_comm(
    model: ModelShape, par: Parallelism, cluster: Cluster, *, data_parallel: int, one_microbatch: float
) -> float:
    """The distributed optimizer's exposed time: its gradient reduce-scatter less the last microbatch's
    backward (2/3 of `one_microbatch`, s), its parameter all-gather less the first one's forward (1/3).
    Dense parameters are sharded over DP x CP, expert ones over the expert-data-parallel group."""
    tp, cp = par.tensor, par.context
    layers = max(par.stage_layers(model.num_layers))
    layer_dense, layer_experts = layer_params_on_rank(model, tensor=tp, expert_group=par.expert * expert_tensor(par))
    dense, experts = layers * layer_dense + embedding_params(model) / tp, layers * layer_experts
    span = tp * cp * data_parallel
    expert_data = span // (par.expert * expert_tensor(par))
    reduce_scatter = _ring(cluster, dense * BYTES_MAIN_GRAD, data_parallel * cp, span)
    reduce_scatter += _ring(cluster, experts * BYTES_MAIN_GRAD, expert_data, span)
    all_gather = _ring(cluster, dense * BYTES_WEIGHT, data_parallel * cp, span)
    all_gather += _ring(cluster, experts * BYTES_WEIGHT, expert_data, span)
    return max(0.0, reduce_scatter - one_microbatch * 2 / 3) + max(0.0, all_gather - one_microbatch / 3)


def _ep_comm(model: ModelShape, par: Parallelism, cluster: Cluster, *, microbatches: int) -> float:
    """An MoE layer's all-to-all dispatch and combine over EP, and its expert-tensor all-gather and
    reduce-scatter over ETP, per layer and microbatch (the module docstring); 0 for a dense model."""
    moe = model.moe
    if moe is None:
        return 0.0
    etp, ep = expert_tensor(par), par.expert
    sequence_split = par.tensor if par.sequence_parallel else 1
    gathered = etp if par.sequence_parallel else 1
    # This GPU's routed copies of its tokens, as the experts take them.
    routed = _micro_tokens(model, par) / sequence_split * moe.router_topk * model.hidden_size * BYTES_ACTIVATION
    ops = 4 + (2 if par.recompute != "none" else 0)
    all_to_all = routed * gathered * (ep - 1) / ep / _bandwidth(cluster, etp * ep) if ep > 1 else 0.0
    expert_tensor_ops = _ring(cluster, routed * gathered, etp, etp)
    layers = max(par.stage_layers(model.num_layers))
    return layers * microbatches * ops * (all_to_all + expert_tensor_ops)


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
