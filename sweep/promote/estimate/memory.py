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
layer's activations while it is recomputed.
Mixture-of-experts layers (Korthikanti's accounting carried over to megatron-core's MoELayer with the
all-to-all dispatcher): the MLP's 6f is replaced by the router's fp32 logits, 4E, and per routed copy of a token
its expert input and output, 4h, and the expert's SwiGLU and down inputs, 6f_e; under sequence parallelism the
copies are gathered over the expert-tensor group, so per token of the layer's input a GPU stores
k (4h x ETP + 6 f_e) / (TP under sequence parallelism, else 1). QK-norm stores the queries and keys again (its
inputs), 2q + 2kv. Parameters: the attention, QKV biases and dense MLPs split over TP; norms and the router
whole on every TP rank; experts split over EP x ETP, their optimizer states sharded over the expert-data-parallel
group, TP x CP x DP / (EP x ETP) (megatron-core's distributed optimizer shards expert parameters over it).
Pipeline stages hold parallelism.stage_layers(num_layers) layers each (uneven first and last where the plan
says). Stage i holds min(PP - i, microbatches) microbatches in flight under 1F1B, the first stage
PP x (1 + (PP-1)/(PP x VPP)) when interleaved (Narayanan et al. 2021, section 2.2; the same factor as
Megatron-LM's theoretical_memory_usage.py); the first and second stages are the candidates for the most loaded
(the second has one fewer in flight, but more layers where the first holds fewer).
The last stage holds one microbatch in flight and the output layer's input and fp32 logits,
4 x (h + V) bytes per token / TP, as in Megatron-LM's theoretical_memory_usage.py.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from sweep.promote.estimate.counts import layer_params_on_rank
from sweep.scale import embedding_params, kv_width, query_width
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

    stage: Literal["first", "second", "last", "only"]
    """The pipeline stage that needs the most: the first (most microbatches in flight), the second (where the
    first holds fewer layers), the last (output layer and logits), or the only one when PP is 1."""
    params_billion: float
    """Parameters held by that GPU, in billions (its experts included)."""
    expert_params_billion: float = 0.0
    """Of them, expert parameters (an MoE target), whose optimizer states shard over the expert-data-parallel
    group rather than data x context."""
    weights_gb: float
    gradients_gb: float
    optimizer_gb: float
    activations_gb: float
    reserve_gb: float
    """Fixed: CUDA context, NCCL buffers, workspaces and allocator fragmentation (an assumption)."""
    total_gb: float


def expert_tensor(par: Parallelism) -> int:
    """The expert-tensor-parallel size: megatron-core's default is the tensor-parallel size."""
    return par.expert_tensor or par.tensor


def activation_bytes_per_token_layer(model: ModelShape) -> float:
    """Bytes of activations one layer stores per token without recomputation and without TP."""
    return 8 * model.hidden_size + _attention_bytes(model) + _mlp_bytes(model)


def _attention_bytes(model: ModelShape) -> float:
    """Q, K, V and the attention output (and QK-norm's inputs), beyond the norm and linear inputs."""
    q, kv = query_width(model), kv_width(model)
    return 4 * q + 4 * kv + (2 * q + 2 * kv if model.qk_layernorm else 0)


def _mlp_bytes(model: ModelShape) -> float:
    """The MLP's bytes beyond its norm and input, without TP: dense 6f; MoE the router's fp32 logits and the
    routed copies (the module docstring)."""
    moe = model.moe
    if moe is None:
        return 6 * model.ffn_hidden_size
    return 4 * moe.num_experts + moe.router_topk * (4 * model.hidden_size + 6 * moe.expert_ffn_hidden_size)


def _stored_mlp_bytes(model: ModelShape, par: Parallelism, sequence_split: int) -> float:
    """_mlp_bytes on one GPU: none when recomputed (selective keeps the MLP's input only), the dense part split
    over TP; an MoE layer's per token of its (sequence-split) input, its routed copies gathered over the
    expert-tensor group under sequence parallelism and each expert's width split over it."""
    moe = model.moe
    if par.recompute == "selective":
        return 0.0
    if moe is None:
        return _mlp_bytes(model) / par.tensor
    etp = expert_tensor(par)
    gathered = etp if par.sequence_parallel else 1
    routed = moe.router_topk * gathered * (4 * model.hidden_size + 6 * moe.expert_ffn_hidden_size / etp)
    return (4 * moe.num_experts + routed) / sequence_split


def stored_bytes_per_token_layer(model: ModelShape, par: Parallelism) -> float:
    """Bytes one layer keeps per token on one GPU until its backward, under `par`'s TP, sequence
    parallelism and recomputation (full: the layer's input only)."""
    h, tp = model.hidden_size, par.tensor
    # The RMSNorm inputs and the column-parallel linears' inputs: split over TP by sequence parallelism only.
    sequence_split = tp if par.sequence_parallel else 1
    if par.recompute == "full":
        return 2 * h / sequence_split
    norm_and_linear_inputs = 8 * h
    return (
        _attention_bytes(model) / tp
        + norm_and_linear_inputs / sequence_split
        + _stored_mlp_bytes(model, par, sequence_split)
    )


def in_flight_microbatches(par: Parallelism, microbatches: int, stage: int = 0) -> float:
    """Microbatches whose activations pipeline stage `stage` (0: the first) holds at its peak."""
    pp = par.pipeline
    if pp == 1:
        return 1.0
    if par.virtual_pipeline is None:
        return float(min(pp - stage, microbatches))
    return pp * (1.0 + (pp - 1) / (pp * par.virtual_pipeline)) if stage == 0 else float(min(pp - stage, microbatches))


class _StageLoad(NamedTuple):
    """What one pipeline stage of one GPU holds: parameters (dense and expert) and activation bytes."""

    name: str
    params: float
    experts: float
    activations: float


def memory_per_gpu(model: ModelShape, par: Parallelism, *, data_parallel: int, reserve_gb: float) -> Memory:
    """The most loaded GPU's memory under `par` with `data_parallel` replicas."""
    tp, pp, cp = par.tensor, par.pipeline, par.context
    microbatches = par.global_batch_size // (par.micro_batch_size * data_parallel)
    stage_layers = par.stage_layers(model.num_layers)
    layer_dense, layer_experts = layer_params_on_rank(model, tensor=tp, expert_group=par.expert * expert_tensor(par))
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

    def load(name: str, stage: int, extra_params: float, extra_acts: float) -> _StageLoad:
        layers = stage_layers[stage]
        acts = layers * stored_layer * in_flight_microbatches(par, microbatches, stage) + transient + extra_acts
        return _StageLoad(name, layers * (layer_dense + layer_experts) + extra_params, layers * layer_experts, acts)

    if pp == 1:
        extra_output = embedding if model.untie_embeddings_and_output_weights else 0.0
        stages = [load("only", 0, embedding + extra_output + model.hidden_size, logits)]
    else:
        stages = [load("first", 0, embedding, 0.0), load("last", pp - 1, embedding + model.hidden_size, logits)]
        if pp > 2:
            stages.append(load("second", 1, 0.0, 0.0))
    expert_data = tp * cp * data_parallel // (par.expert * expert_tensor(par))
    candidates = [_memory(stage, data_parallel * cp, expert_data, reserve_gb) for stage in stages]
    return max(candidates, key=lambda memory: memory.total_gb)


def _memory(load: _StageLoad, optimizer_shards: int, expert_shards: int, reserve_gb: float) -> Memory:
    weights = load.params * BYTES_WEIGHT / GB
    gradients = load.params * BYTES_MAIN_GRAD / GB
    dense = load.params - load.experts
    optimizer = (dense / optimizer_shards + load.experts / expert_shards) * BYTES_OPTIMIZER / GB
    acts = load.activations / GB
    return Memory(
        stage=load.name,
        params_billion=load.params / 1e9,
        expert_params_billion=load.experts / 1e9,
        weights_gb=weights,
        gradients_gb=gradients,
        optimizer_gb=optimizer,
        activations_gb=acts,
        reserve_gb=reserve_gb,
        total_gb=weights + gradients + optimizer + acts + reserve_gb,
    )
