"""Memory per GPU of a layout: weights, gradients, optimizer states, activations and a fixed reserve.

Bytes per parameter follow megatron-core's mixed precision with the distributed optimizer: bf16
weights (2), fp32 main gradients (4, the grad buffer is reduced in fp32 and is not sharded), and
fp32 master weights + Adam m and v (12) sharded over the data-parallel x context-parallel group
(megatron-core's optimizer shards over get_data_parallel_group(with_context_parallel=True)).

Activations follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
Transformer Models", arXiv:2205.05198, section 4 and table 2), adapted to this architecture:
bf16 tensors stored per token of one layer,

  attention: RMSNorm input 2h + QKV input 2h + Q 2h + K, V 2 x 2 x kv + attention output 2h,
  MLP:       RMSNorm input 2h + gate/up input 2h + SwiGLU input 2 x 2f + down input 2f,

i.e. 12h + 4kv + 6f bytes, no dropout masks (Llama trains without dropout); Q and the attention output are 2q
each where kv_channels makes the query width q other than h. Tensor parallelism
splits them all under sequence parallelism; without it (Transformer Engine's layers are needed
for it) the two RMSNorm inputs and the two column-parallel inputs, 8h, stay whole on every TP rank
(Korthikanti's table 2, "tensor parallel" row). Flash attention never stores the s x s scores
(Korthikanti's 5as/h term), so recomputing the attention core would save nothing: selective
recomputation recomputes the MLP instead, which then stores only its input, saving the SwiGLU and
down-projection inputs (6f); full recomputation keeps only each layer's input (2h) plus one
layer's activations while it is recomputed. The first pipeline stage holds the most microbatches
in flight: min(PP, microbatches) under 1F1B, PP x (1 + (PP-1)/(PP x VPP)) when interleaved
(Narayanan et al. 2021, section 2.2; the same factor as Megatron-LM's theoretical_memory_usage.py).
The last stage holds one microbatch in flight and the output layer's input and fp32 logits,
4 x (h + V) bytes per token / TP, as in Megatron-LM's theoretical_memory_usage.py.
"""

from __future__ import annotations

from typing import Literal

from sweep.promote.counts import embedding_params, kv_width, layer_matrix_params, layer_norm_params, query_width
from train_entry.config import StrictConfig
from train_entry.megatron.config import ModelShape, Parallelism

GB = 1e9

BYTES_WEIGHT = 2
"""bf16 weights."""
BYTES_MAIN_GRAD = 4
"""fp32 main gradients (megatron-core reduces bf16 runs' gradients in fp32)."""
BYTES_OPTIMIZER = 12
"""fp32 master weights, Adam m and v; sharded over data x context parallel."""


class Memory(StrictConfig):
    """Memory of the most loaded GPU of a layout, in GB (1e9 bytes)."""

    stage: Literal["first", "last", "only"]
    """The pipeline stage that needs the most: the first (most microbatches in flight), the last
    (output layer and logits), or the only one when PP is 1."""
    params_billion: float
    """Parameters held by that GPU, in billions."""
    weights_gb: float
    gradients_gb: float
    optimizer_gb: float
    activations_gb: float
    reserve_gb: float
    """Fixed: CUDA context, NCCL buffers, workspaces and allocator fragmentation (an assumption)."""
    total_gb: float


def activation_bytes_per_token_layer(model: ModelShape) -> int:
    """Bytes of activations one layer stores per token without recomputation and without TP."""
    return 8 * model.hidden_size + 4 * query_width(model) + 4 * kv_width(model) + 6 * model.ffn_hidden_size


def stored_bytes_per_token_layer(model: ModelShape, par: Parallelism) -> float:
    """Bytes one layer keeps per token on one GPU until its backward, under `par`'s TP, sequence
    parallelism and recomputation (full: the layer's input only)."""
    h, tp = model.hidden_size, par.tensor
    # The RMSNorm inputs and the column-parallel linears' inputs: split over TP by sequence parallelism only.
    sequence_split = tp if par.sequence_parallel else 1
    if par.recompute == "full":
        return 2 * h / sequence_split
    norm_and_linear_inputs = 8 * h
    split = activation_bytes_per_token_layer(model) - norm_and_linear_inputs
    if par.recompute == "selective":
        split -= 6 * model.ffn_hidden_size  # the recomputed MLP's SwiGLU and down-projection inputs
    return split / tp + norm_and_linear_inputs / sequence_split


def in_flight_microbatches(par: Parallelism, microbatches: int) -> float:
    """Microbatches whose activations the first pipeline stage holds at its peak."""
    pp = par.pipeline
    if pp == 1:
        return 1.0
    if par.virtual_pipeline is None:
        return float(min(pp, microbatches))
    return pp * (1.0 + (pp - 1) / (pp * par.virtual_pipeline))


def memory_per_gpu(model: ModelShape, par: Parallelism, *, data_parallel: int, reserve_gb: float) -> Memory:
    """The most loaded GPU's memory under `par` with `data_parallel` replicas."""
    tp, pp, cp = par.tensor, par.pipeline, par.context
    microbatches = par.global_batch_size // (par.micro_batch_size * data_parallel)
    layers = model.num_layers // pp
    layer_params = layer_matrix_params(model) / tp + layer_norm_params(model)
    embedding = embedding_params(model) / tp
    # Tokens of one microbatch on one GPU, and the activations each layer keeps for its backward.
    tokens = par.micro_batch_size * model.seq_length / cp
    stored_layer = tokens * stored_bytes_per_token_layer(model, par)
    # Full recomputation: one layer's activations while it is recomputed in the backward.
    recomputed = par.model_copy(update={"recompute": "none"})
    transient = tokens * stored_bytes_per_token_layer(model, recomputed) if par.recompute == "full" else 0.0
    # The output layer's input (split over TP only with sequence parallelism) and its fp32 logits.
    output_input = 4 * model.hidden_size / (tp if par.sequence_parallel else 1)
    logits = tokens * (output_input + 4 * model.vocab_size / tp)

    first_params = layers * layer_params + embedding
    first_acts = layers * stored_layer * in_flight_microbatches(par, microbatches) + transient
    last_params = layers * layer_params + embedding + model.hidden_size
    last_acts = layers * stored_layer + transient + logits
    if pp == 1:
        extra_output = embedding if model.untie_embeddings_and_output_weights else 0.0
        stages = [("only", first_params + extra_output + model.hidden_size, first_acts + logits)]
    else:
        stages = [("first", first_params, first_acts), ("last", last_params, last_acts)]
    candidates = [_memory(stage, params, acts, data_parallel * cp, reserve_gb) for stage, params, acts in stages]
    return max(candidates, key=lambda memory: memory.total_gb)


def _memory(stage: str, params: float, activations: float, optimizer_shards: int, reserve_gb: float) -> Memory:
    weights = params * BYTES_WEIGHT / GB
    gradients = params * BYTES_MAIN_GRAD / GB
    optimizer = params * BYTES_OPTIMIZER / optimizer_shards / GB
    acts = activations / GB
    return Memory(
        stage=stage,
        params_billion=params / 1e9,
        weights_gb=weights,
        gradients_gb=gradients,
        optimizer_gb=optimizer,
        activations_gb=acts,
        reserve_gb=reserve_gb,
        total_gb=weights + gradients + optimizer + acts + reserve_gb,
    )
