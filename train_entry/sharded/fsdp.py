"""The base as a Hugging Face causal LM sharded over a trial's workers with FSDP2 (torch's `fully_shard`).

Each decoder layer (the model's `_no_split_modules`, as accelerate wraps them) is one FSDP unit: its
weights are gathered just before it runs and freed after. So are the input embedding and the output
layer when they are not tied (an 8B model's are 0.5B parameters each); tied, they and the final norm
are the root unit, which FSDP keeps gathered from the forward to the end of the backward. Parameters,
gradients and Adam state live sharded, in fp32.

On CUDA, FSDP's mixed precision computes in bf16 and reduces gradients in fp32, as the one-process
trial's bf16 autocast over fp32 weights does. On CPU (gloo: the tests) everything stays fp32, as in a
one-process CPU trial, so the two can be compared number for number.

Every worker builds the model on the meta device (no memory), shards it and allocates only its own
shard; rank 0 alone reads the weights (with every check of train_entry.model.load_causal_lm) and
torch's distributed state dict sends each worker its part. Eight workers of an 8B trial thus hold one
fp32 copy in host memory between them, not eight.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from transformers import AutoModelForCausalLM, PreTrainedModel

from train_entry.group import Group
from train_entry.model import Runtime, attention_kernel, base_config, decoder_layers, load_causal_lm, ready_layers


def mixed_precision(runtime: Runtime) -> MixedPrecisionPolicy:
    """bf16 compute with fp32 gradient reduction on CUDA (master weights stay fp32, sharded); fp32 on CPU."""
    if runtime.device.type == "cuda":
        return MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    return MixedPrecisionPolicy()


def sharded_causal_lm(
    base_dir: str, runtime: Runtime, group: Group, *, activation_checkpointing: bool
) -> PreTrainedModel:
    """The base, sharded over `group` (torch.distributed's default group) on `runtime`'s device."""
    config = base_config(base_dir)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(
            config, attn_implementation=attention_kernel(config, runtime), dtype=torch.float32, trust_remote_code=False
        )
    ready_layers(model, runtime, activation_checkpointing=activation_checkpointing)
    policy = mixed_precision(runtime)
    for unit in shard_units(model):
        fully_shard(unit, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    model.to_empty(device=runtime.device)
    # Rank 0 reads and checks the directory; the others wait for its weights in the broadcast.
    full = load_causal_lm(base_dir, Runtime.cpu()) if group.is_leader else None
    set_model_state_dict(
        model,
        full.state_dict() if full is not None else {},
        options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True),
    )
    _broadcast_buffers(model, full, group)
    return model


def shard_units(model: PreTrainedModel) -> list[torch.nn.Module]:
    """The modules sharded as units of their own, in the order they run: the input embedding, the repeated blocks
    the model names as not to be split (LlamaDecoderLayer, ...), the output layer; the embeddings only untied."""
    layers = decoder_layers(model)
    embedding, output = model.get_input_embeddings(), model.get_output_embeddings()
    if output is None or output.weight is embedding.weight:
        return layers
    return [embedding, *layers, output]


def _broadcast_buffers(model: torch.nn.Module, full: torch.nn.Module | None, group: Group) -> None:
    """Buffers are not sharded, and the non-persistent ones (RoPE's inverse frequencies) are in no state dict:
    `to_empty` left them unset, so rank 0 sends its own."""
    source = dict(full.named_buffers()) if full is not None else {}
    for name, buffer in model.named_buffers():
        if group.is_leader:
            buffer.copy_(source[name])
        if group.size > 1:
            dist.broadcast(buffer, src=0)
