"""Parameter counts of a Llama-architecture model, shared by the proxy ladder (sweep.ladder.config) and the full-run
plan's memory and FLOP models (sweep.promote.counts): one formula, so a proxy's N and a target's N are counted
the same way."""

from __future__ import annotations

from train_entry.megatron.config import ModelShape


def head_width(model: ModelShape) -> int:
    """One attention head's width: kv_channels, else hidden / heads."""
    return model.kv_channels or model.hidden_size // model.num_attention_heads


def query_width(model: ModelShape) -> int:
    """Width of the query projection and of the attention output: heads x head width (the hidden size but where
    kv_channels says otherwise)."""
    return model.num_attention_heads * head_width(model)


def kv_width(model: ModelShape) -> int:
    """Width of the key (or value) projection: key/value heads x head width."""
    return model.num_query_groups * head_width(model)


def layer_matrix_params(model: ModelShape) -> int:
    """One layer's weight matrices: Q and O (h x query width), K and V (h x kv width), SwiGLU gate, up and down."""
    h = model.hidden_size
    return 2 * h * query_width(model) + 2 * h * kv_width(model) + 3 * h * model.ffn_hidden_size


def layer_norm_params(model: ModelShape) -> int:
    """The two RMSNorm weight vectors of a layer; replicated, not split, by tensor parallelism."""
    return 2 * model.hidden_size


def non_embedding_params(model: ModelShape) -> int:
    """N of the ladder's law: every parameter but the embedding and output matrices (layers and the final
    norm). Kaplan et al. 2020 (arXiv:2001.08361) found scaling cleaner in it; at the proxies' sizes the
    embedding is 40 % of the total and would bend the axis, at 70B it is 3 %."""
    return model.num_layers * (layer_matrix_params(model) + layer_norm_params(model)) + model.hidden_size


def embedding_params(model: ModelShape) -> int:
    """One vocabulary x hidden matrix: the input embedding, and again the untied output layer."""
    return model.vocab_size * model.hidden_size


def total_params(model: ModelShape) -> int:
    embeddings = embedding_params(model) * (2 if model.untie_embeddings_and_output_weights else 1)
    return non_embedding_params(model) + embeddings
