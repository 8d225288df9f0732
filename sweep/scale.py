"""Parameter counts of a decoder shape, shared by the proxy ladder (sweep.ladder.config) and the full-run plan's
memory and FLOP models (sweep.promote.estimate.counts): one formula, so a proxy's N and a target's N are counted the same
way. Every architecture feature a ModelShape can carry (QKV bias, QK-norm, mixture-of-experts MLPs) is counted
here, so a family that maps its config.json onto those features is counted without a change here."""

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


def attention_matrix_params(model: ModelShape) -> int:
    """One layer's attention weights: Q and O (h x query width), K and V (h x kv width)."""
    h = model.hidden_size
    return 2 * h * query_width(model) + 2 * h * kv_width(model)


def dense_mlp_params(model: ModelShape) -> int:
    """One layer's dense SwiGLU MLP (gate, up and down, h x f each); 0 in a mixture-of-experts layer."""
    return 0 if model.moe is not None else 3 * model.hidden_size * model.ffn_hidden_size


def expert_params(model: ModelShape) -> int:
    """One layer's experts, all of them (gate, up and down of each); 0 in a dense layer."""
    moe = model.moe
    return 0 if moe is None else moe.num_experts * 3 * model.hidden_size * moe.expert_ffn_hidden_size


def active_expert_params(model: ModelShape) -> int:
    """The experts one token runs through in a layer: top-k of them."""
    moe = model.moe
    return 0 if moe is None else moe.router_topk * 3 * model.hidden_size * moe.expert_ffn_hidden_size


def router_params(model: ModelShape) -> int:
    """One layer's router (h x experts); megatron-core keeps it whole on every tensor-parallel rank."""
    return 0 if model.moe is None else model.hidden_size * model.moe.num_experts


def layer_matrix_params(model: ModelShape) -> int:
    """One layer's weight matrices, every expert included: what a checkpoint stores."""
    return attention_matrix_params(model) + dense_mlp_params(model) + expert_params(model) + router_params(model)


def active_matrix_params(model: ModelShape) -> int:
    """One layer's weight matrices one token multiplies by: the attention, the dense MLP or the top-k experts and
    the router. 6 x these per token is the layer's training FLOPs (the model-FLOPs convention)."""
    return attention_matrix_params(model) + dense_mlp_params(model) + active_expert_params(model) + router_params(model)


def layer_bias_params(model: ModelShape) -> int:
    """The QKV projection's biases (Qwen 2.5), split over tensor parallelism like the projection's output."""
    return query_width(model) + 2 * kv_width(model) if model.add_qkv_bias else 0


def layer_norm_params(model: ModelShape) -> int:
    """The two RMSNorm weight vectors of a layer, and QK-norm's two of one head's width; replicated, not split,
    by tensor parallelism."""
    return 2 * model.hidden_size + (2 * head_width(model) if model.qk_layernorm else 0)


def layer_params(model: ModelShape) -> int:
    return layer_matrix_params(model) + layer_bias_params(model) + layer_norm_params(model)


def non_embedding_params(model: ModelShape) -> int:
    """N of the ladder's law: every parameter but the embedding and output matrices (layers and the final
    norm). Kaplan et al. 2020 (arXiv:2001.08361) found scaling cleaner in it; at the proxies' sizes the
    embedding is 40 % of the total and would bend the axis, at 70B it is 3 %."""
    return model.num_layers * layer_params(model) + model.hidden_size


def embedding_params(model: ModelShape) -> int:
    """One vocabulary x hidden matrix: the input embedding, and again the untied output layer."""
    return model.vocab_size * model.hidden_size


def total_params(model: ModelShape) -> int:
    embeddings = embedding_params(model) * (2 if model.untie_embeddings_and_output_weights else 1)
    return non_embedding_params(model) + embeddings


def active_params(model: ModelShape) -> int:
    """Parameters one token uses: total_params less the experts it is not routed to (equal for a dense model)."""
    return total_params(model) - model.num_layers * (expert_params(model) - active_expert_params(model))
