"""FLOP counts of a target's shape and its parameters on one GPU, the inputs of the memory and step-time models; the
parameter counts themselves are sweep.scale's, shared with the spec and the law."""

from __future__ import annotations

from sweep.scale import (
    active_expert_params,
    active_matrix_params,
    attention_matrix_params,
    dense_mlp_params,
    embedding_params,
    expert_params,
    layer_bias_params,
    layer_norm_params,
    query_width,
    router_params,
)
from train_entry.megatron.config import ModelShape


def model_flops_per_token(model: ModelShape) -> float:
    """Training FLOPs per token (forward + backward, no recomputation): 6 x the matmul parameters a token runs
    through (layers, with only its top-k experts of an MoE layer, and the output layer; an embedding lookup is no
    matmul) + 12 x layers x query width x the keys it attends, counted non-causally. The convention of
    Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU Clusters", eq. 3) and PaLM
    (Chowdhery et al. 2022, appendix B), in which published MFU figures are stated."""
    return model.num_layers * layer_flops_per_token(model) + output_layer_flops_per_token(model)


def layer_flops_per_token(model: ModelShape) -> float:
    """One layer's part of model_flops_per_token: what a pipeline stage runs per layer it holds."""
    return 6.0 * active_matrix_params(model) + attention_flops_per_token(model) / model.num_layers


def output_layer_flops_per_token(model: ModelShape) -> float:
    """The output layer's part of model_flops_per_token (forward + backward)."""
    return 6.0 * embedding_params(model)


def attended_keys(model: ModelShape) -> float:
    """Keys per query in the non-causal convention (twice the causal mean): the sequence length, or under a
    sliding window w < s, 2w - w^2/s (each query sees min(position, w) keys; twice their mean over the sequence)."""
    s, w = model.seq_length, model.window_size
    if w is None or w >= s:
        return float(s)
    return 2.0 * w - w * w / s


def attention_flops_per_token(model: ModelShape) -> float:
    """The attention part of model_flops_per_token (forward + backward): its scores and weighted sum are as wide as
    the queries (the hidden size but where kv_channels says otherwise), over the keys each query attends."""
    return 12.0 * model.num_layers * query_width(model) * attended_keys(model)


def mlp_flops_per_token(model: ModelShape) -> float:
    """The MLPs' part of model_flops_per_token (forward + backward): the dense SwiGLU's gate, up and down, or the
    router and the top-k experts'."""
    return 6.0 * model.num_layers * (dense_mlp_params(model) + active_expert_params(model) + router_params(model))


def layer_params_on_rank(model: ModelShape, *, tensor: int, expert_group: int) -> tuple[float, float]:
    """One layer's parameters on one GPU, (dense, experts): the attention, QKV biases and dense MLP split over
    `tensor` ranks, norms and the router whole on each; the experts split over EP x ETP = `expert_group`."""
    split = attention_matrix_params(model) + layer_bias_params(model) + dense_mlp_params(model)
    dense = split / tensor + layer_norm_params(model) + router_params(model)
    return dense, expert_params(model) / expert_group
