"""Core attention for the full run without Transformer Engine: flash-attn 2 when installed, else PyTorch's SDPA.

megatron-core's own local core attention (DotProductAttention) writes the whole s x s score matrix
of every head to GPU memory, softmaxes it in a separate kernel and reads it back: at 8192-token
sequences that is most of a layer's time and memory. torch.nn.functional.scaled_dot_product_attention
runs flash attention instead (causal, grouped-query heads, never storing the scores), and the
flash-attn package's kernels where the `gpu` extra installed them. Same inputs and output as
DotProductAttention ([s, b, heads, head dim] in, [s, b, heads x head dim] out), no parameters, so
the layer's checkpoint keys stay the same. Transformer Engine's attention stays the first choice
where TE is installed (model.layer_spec).
"""

from __future__ import annotations

import importlib.util
import math

import torch
import torch.nn.functional as F
from megatron.core.packed_seq_params import PackedSeqParams
from megatron.core.process_groups_config import ProcessGroupCollection
from megatron.core.transformer.enums import AttnMaskType
from megatron.core.transformer.module import MegatronModule
from megatron.core.transformer.transformer_config import TransformerConfig

FLASH_ATTN = "flash-attn 2"
SDPA = "torch sdpa"
TRANSFORMER_ENGINE = "transformer engine"


def has_flash_attn() -> bool:
    return importlib.util.find_spec("flash_attn") is not None


def attention_backend(*, transformer_engine: bool) -> str:
    """Which attention kernels a bf16 run on CUDA uses: TE's, flash-attn 2's, or SDPA's."""
    if transformer_engine:
        return TRANSFORMER_ENGINE
    return FLASH_ATTN if has_flash_attn() else SDPA


class SDPAttention(MegatronModule):
    """Causal self-attention over whole sequences, in megatron-core's core-attention interface.

    Built by megatron-core's SelfAttention with the keywords of its CoreAttentionBuilder protocol.
    Refuses what it does not do rather than computing something else: context parallelism (TE's
    attention passes keys and values around the context-parallel ring), attention dropout (Llama
    trains without), sliding windows and softmax variants, masks, biases and packed sequences.
    """

    def __init__(
        self,
        config: TransformerConfig,
        layer_number: int,
        attn_mask_type: AttnMaskType,
        attention_type: str,
        attention_dropout: float | None = None,
        softmax_scale: float | None = None,
        cp_comm_type: str | None = None,
        pg_collection: ProcessGroupCollection | None = None,
    ) -> None:
        super().__init__(config=config)
        dropout = config.attention_dropout if attention_dropout is None else attention_dropout
        unsupported = {
            "context_parallel_size": (config.context_parallel_size, 1),
            "attention_dropout": (dropout, 0.0),
            "window_size": (config.window_size, None),
            "softmax_type": (config.softmax_type, "vanilla"),
        }
        for name, (value, supported) in unsupported.items():
            if value != supported:
                raise ValueError(f"SDPAttention supports only {name}={supported!r}, got {name}={value!r}")
        if attn_mask_type not in (AttnMaskType.causal, AttnMaskType.no_mask):
            raise ValueError(f"SDPAttention takes a causal mask or none, got {attn_mask_type=}")
        self.attn_mask_type = attn_mask_type
        head_dim = config.kv_channels
        # apply_query_key_layer_scaling divides the scores by the layer number and multiplies the fp32
        # softmax input back by it: the same probabilities, so the plain scale stands for both.
        self.softmax_scale = 1.0 / math.sqrt(head_dim) if softmax_scale is None else softmax_scale
        self.flash_attn_func = _flash_attn_func()

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        attn_mask_type: AttnMaskType | None = None,
        attention_bias: torch.Tensor | None = None,
        packed_seq_params: PackedSeqParams | None = None,
    ) -> torch.Tensor:
        """query [sq, b, heads, head dim], key and value [sk, b, groups, head dim] -> [sq, b, heads x head dim]."""
        if attention_mask is not None or attention_bias is not None or packed_seq_params is not None:
            raise ValueError(
                "SDPAttention takes whole causal sequences: no attention_mask, attention_bias or packed_seq_params "
                "(build the data with create_attention_mask=False and no packing)"
            )
        causal = (attn_mask_type or self.attn_mask_type) is AttnMaskType.causal
        if causal and query.size(0) != key.size(0):
            raise ValueError(
                f"causal SDPAttention needs as many queries as keys, got {query.size(0)} and {key.size(0)}"
            )
        sequence, batch = query.shape[:2]
        if self.flash_attn_func is not None and query.is_cuda and query.dtype in (torch.bfloat16, torch.float16):
            # flash-attn takes [b, s, heads, head dim] and grouped key/value heads as they are.
            context = self.flash_attn_func(
                query.transpose(0, 1),
                key.transpose(0, 1),
                value.transpose(0, 1),
                softmax_scale=self.softmax_scale,
                causal=causal,
            ).transpose(0, 1)
        else:
            # SDPA takes [b, heads, s, head dim]; enable_gqa shares each key/value head with its
            # group of query heads inside the kernel instead of copying it.
            context = F.scaled_dot_product_attention(
                query.permute(1, 2, 0, 3),
                key.permute(1, 2, 0, 3),
                value.permute(1, 2, 0, 3),
                is_causal=causal,
                scale=self.softmax_scale,
                enable_gqa=query.size(2) != key.size(2),
            ).permute(2, 0, 1, 3)
        return context.reshape(sequence, batch, -1)


def _flash_attn_func():
    """flash_attn.flash_attn_func where the package is installed (it needs CUDA), else None."""
    if not has_flash_attn():
        return None
    from flash_attn import flash_attn_func

    return flash_attn_func
