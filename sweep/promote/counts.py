"""Parameter and FLOP counts of a Llama-architecture model, the inputs of the memory and step-time models."""

from __future__ import annotations

from sweep.scale import embedding_params, kv_width, layer_matrix_params, layer_norm_params, query_width, total_params
from train_entry.megatron.config import ModelShape

__all__ = [
    "attention_flops_per_token",
    "embedding_params",
    "kv_width",
    "layer_matrix_params",
    "layer_norm_params",
    "mlp_flops_per_token",
    "model_flops_per_token",
    "output_layer_flops_per_token",
    "query_width",
    "total_params",
]


def model_flops_per_token(model: ModelShape) -> float:
    """Training FLOPs per token (forward + backward, no recomputation): 6 x the matmul parameters
    (layers and output layer; an embedding lookup is no matmul) + 12 x layers x hidden x sequence
    for attention scores and their weighted sum, counted over the whole sequence. The convention of
    Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU Clusters", eq. 3)
    and PaLM (Chowdhery et al. 2022, appendix B), in which published MFU figures are stated."""
    layers = 6.0 * model.num_layers * layer_matrix_params(model)
    return layers + output_layer_flops_per_token(model) + attention_flops_per_token(model)


def output_layer_flops_per_token(model: ModelShape) -> float:
    """The output layer's part of model_flops_per_token (forward + backward)."""
    return 6.0 * embedding_params(model)


def attention_flops_per_token(model: ModelShape) -> float:
    """The attention part of model_flops_per_token (forward + backward): its scores and weighted sum are as wide as
    the queries (the hidden size but where kv_channels says otherwise)."""
    return 12.0 * model.num_layers * query_width(model) * model.seq_length


def mlp_flops_per_token(model: ModelShape) -> float:
    """The SwiGLU MLPs' part of model_flops_per_token (forward + backward): gate, up and down, h x f each."""
    return 6.0 * model.num_layers * 3 * model.hidden_size * model.ffn_hidden_size
