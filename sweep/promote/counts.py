"""Parameter and FLOP counts of a Llama-architecture model, the inputs of the memory and step-time models."""

from __future__ import annotations

from train_entry.megatron.config import ModelShape


def kv_width(model: ModelShape) -> int:
    """Width of the key (or value) projection: key/value heads x head dimension."""
    return model.num_query_groups * (model.hidden_size // model.num_attention_heads)


def layer_matrix_params(model: ModelShape) -> int:
    """One layer's weight matrices: Q and O (h x h), K and V (h x kv width), SwiGLU gate, up and down."""
    h = model.hidden_size
    return 2 * h * h + 2 * h * kv_width(model) + 3 * h * model.ffn_hidden_size


def layer_norm_params(model: ModelShape) -> int:
    """The two RMSNorm weight vectors of a layer; replicated, not split, by tensor parallelism."""
    return 2 * model.hidden_size


def embedding_params(model: ModelShape) -> int:
    """One vocabulary x hidden matrix: the input embedding, and again the untied output layer."""
    return model.vocab_size * model.hidden_size


def total_params(model: ModelShape) -> int:
    embeddings = embedding_params(model) * (2 if model.untie_embeddings_and_output_weights else 1)
    layers = model.num_layers * (layer_matrix_params(model) + layer_norm_params(model))
    return layers + embeddings + model.hidden_size  # + the final norm


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
    """The attention part of model_flops_per_token (forward + backward)."""
    return 12.0 * model.num_layers * model.hidden_size * model.seq_length
