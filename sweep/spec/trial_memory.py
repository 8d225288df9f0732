"""Memory per GPU of a proxy trial, and so how many GPUs a trial of a given base needs.

A trial of W > 1 workers is sharded (train_entry.sharded: FSDP2 over each decoder layer and the untied
embeddings, bf16 compute, fp32 gradient reduction). Each GPU holds

- its shard of the fp32 weights (4 bytes per parameter), fp32 gradients (4) and Adam's two moments (8): 16 / W;
- gathered bf16 weights: the root unit's all the time (the final norm, and the embeddings when tied), and two
  units in flight (one running, the next prefetched), each with its bf16 weights and gradients and the fp32 copy
  of the gradients FSDP reduces: 2 + 2 + 4 bytes per parameter of the two largest units;
- activations of proxy.batch_size / W sequences of proxy.seq_len tokens (below), and one layer's again as the
  backward's working set (its recompute, under activation checkpointing);
- the logits at their peak: the output layer's bf16, their fp32 copy and log-softmax, 10 bytes per token and
  vocabulary entry;
- a fixed reserve for the CUDA context, NCCL's buffers and the allocator's fragmentation.

A one-GPU trial is the one-process trial: fp32 weights, gradients and Adam whole (16 bytes per parameter), the
bf16 copies autocast makes of the weights (2), the same activations and logits.

Activations per token of one layer, as the Hugging Face Llama layer stores them for its backward in bf16 (2 bytes),
with flash attention: each RMSNorm keeps its fp32 input (4h) and its normalised bf16 (2h), the projections after it
their shared input (2h); attention keeps the rotated query (2h) and key (2kv), the value (2kv) and its output, which
the output projection reads as it is (2h); the SwiGLU keeps gate and up (2f each), the SiLU's output (2f) and the
down projection's input (2f): 20h + 4kv + 8f bytes (the query and the attention output 2q each, q the query width,
where kv_channels makes it other than h), and a few fp32 figures per token (each norm's scale, each
head's log-sum-exp). tests/sweep/spec/test_trial_memory.py counts them on a real layer. That is more than
Megatron's fused layer keeps (12h + 4kv + 6f, sweep.promote.estimate.memory): a proxy trains the Hugging Face model. Under
activation checkpointing a layer keeps only its input (2h) until its backward recomputes the rest.
"""

from __future__ import annotations

from pydantic import Field

from sweep.scale import (
    embedding_params,
    kv_width,
    layer_matrix_params,
    layer_norm_params,
    query_width,
    total_params,
)
from train_entry.config import StrictConfig
from train_entry.megatron.config import ModelShape

GB = 1e9
MAX_WORKERS = 64
"""The largest trial sized: eight nodes of eight GPUs, far above any proxy."""
RESERVE_GB = 6.0
"""CUDA context, NCCL's buffers and allocator fragmentation: the full-run plan's assumption
(sweep.promote.estimate.assumptions.Assumptions.memory_reserve_gb)."""
IN_FLIGHT_UNITS = 2
"""FSDP gathers the next unit while the current one runs (forward and backward prefetch)."""
BYTES_SHARDED = 16
"""fp32 weights, fp32 gradients, Adam's first and second moments in fp32."""
BYTES_IN_FLIGHT = 8
"""A gathered unit's bf16 weights and bf16 gradients, and the fp32 copy of the gradients FSDP reduce-scatters."""
BYTES_AUTOCAST = 2
"""The one-process trial's autocast keeps a bf16 copy of each weight from the forward to its backward."""
BYTES_LOGITS = 10
"""Per token and vocabulary entry at the loss: bf16 logits, their fp32 copy, the fp32 log-softmax."""


class TrialMemory(StrictConfig):
    """Memory of one GPU of a proxy trial of `workers` GPUs, in GB (1e9 bytes)."""

    workers: int = Field(gt=0)
    params_billion: float
    """The whole model's parameters, in billions."""
    state_gb: float
    """Weights, gradients and Adam state: this GPU's shard of them (all of them on one GPU, with autocast's copies)."""
    gathered_gb: float
    """Sharded trials: the bf16 weights and gradients of the units gathered at once."""
    activations_gb: float
    logits_gb: float
    reserve_gb: float
    total_gb: float

    def line(self) -> str:
        """The figures as a person reads them, e.g. in a refusal."""
        return (
            f"{self.total_gb:.1f} GB per GPU over {self.workers} GPU(s) for a {self.params_billion:.2f}B-parameter "
            f"model: weights, gradients and Adam {self.state_gb:.1f}, gathered weights {self.gathered_gb:.1f}, "
            f"activations {self.activations_gb:.1f}, logits {self.logits_gb:.1f}, reserve {self.reserve_gb:.1f}"
        )


def activation_bytes_per_token_layer(model: ModelShape) -> int:
    """What one Hugging Face Llama layer keeps per token for its backward (see the module's docstring)."""
    return 16 * model.hidden_size + 4 * query_width(model) + 4 * kv_width(model) + 8 * model.ffn_hidden_size


def trial_memory(model: ModelShape, *, batch_size: int, workers: int, activation_checkpointing: bool) -> TrialMemory:
    """One GPU's memory in a trial of `workers` GPUs training batches of `batch_size` sequences of model.seq_length."""
    h, vocab = model.hidden_size, model.vocab_size
    layer = layer_matrix_params(model) + layer_norm_params(model)
    params = total_params(model)
    tokens = batch_size // workers * model.seq_length
    full_layer = activation_bytes_per_token_layer(model)
    kept_layer = 2 * h if activation_checkpointing else full_layer
    # Every layer's kept activations, one layer's again as the backward's working set, the final norm's (8h).
    activations = tokens * (model.num_layers * kept_layer + full_layer + 8 * h)
    if workers == 1:
        state, gathered = params * (BYTES_SHARDED + BYTES_AUTOCAST), 0.0
    else:
        state = params * BYTES_SHARDED / workers
        untied = model.untie_embeddings_and_output_weights
        root = h + (0 if untied else embedding_params(model))
        units = sorted([layer] * model.num_layers + ([embedding_params(model)] * 2 if untied else []), reverse=True)
        gathered = root * 2 + sum(units[:IN_FLIGHT_UNITS]) * BYTES_IN_FLIGHT
    logits = tokens * vocab * BYTES_LOGITS
    parts = [state / GB, gathered / GB, activations / GB, logits / GB, RESERVE_GB]
    return TrialMemory(
        workers=workers,
        params_billion=params / 1e9,
        state_gb=parts[0],
        gathered_gb=parts[1],
        activations_gb=parts[2],
        logits_gb=parts[3],
        reserve_gb=RESERVE_GB,
        total_gb=sum(parts),
    )


def gpus_needed(
    model: ModelShape, *, batch_size: int, gpu_memory_gb: float, activation_checkpointing: bool
) -> TrialMemory:
    """The fewest GPUs (dividing batch_size: each trains an equal part of every batch) whose memory holds one
    trial; ValueError naming the figures when not even MAX_WORKERS of them do."""
    counts = [workers for workers in range(1, MAX_WORKERS + 1) if batch_size % workers == 0]
    for workers in counts:
        memory = trial_memory(
            model, batch_size=batch_size, workers=workers, activation_checkpointing=activation_checkpointing
        )
        if memory.total_gb <= gpu_memory_gb:
            return memory
    raise ValueError(f"a trial does not fit GPUs of {gpu_memory_gb:g} GB: {memory.line()}")
