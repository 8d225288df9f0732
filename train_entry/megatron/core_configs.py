"""A FullRunConfig turned into megatron-core's own config objects, whose __post_init__ checks then run.

Builds on CPU without a process group or a GPU, so a plan is checked against megatron-core's
rules before any GPU is booked, and the entry builds its model and optimizer from the same objects.
"""

from __future__ import annotations

import importlib.util
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from megatron.core.distributed import DistributedDataParallelConfig
from megatron.core.optimizer import OptimizerConfig
from megatron.core.transformer.enums import AttnBackend
from megatron.core.transformer.transformer_config import TransformerConfig

from train_entry.megatron.config import FullRunConfig, ModelShape, Parallelism


class CoreConfigError(ValueError):
    """megatron-core rejects a full-run config; the message carries megatron-core's own reason."""


class CoreConfigs(NamedTuple):
    transformer: TransformerConfig
    optimizer: OptimizerConfig
    ddp: DistributedDataParallelConfig


def has_transformer_engine() -> bool:
    """Whether Transformer Engine is importable: it brings flash attention and the fused kernels."""
    return importlib.util.find_spec("transformer_engine") is not None


def core_configs(
    config: FullRunConfig,
    *,
    transformer_engine: bool | None = None,
    fusions: bool = True,
    use_cpu_initialization: bool = False,
) -> CoreConfigs:
    """megatron-core's TransformerConfig, OptimizerConfig and DistributedDataParallelConfig for `config`.

    transformer_engine (default: whether it is installed) picks flash attention and TE's fused
    kernels; without it the model uses the SDPA / flash-attn core attention and megatron-core's own
    fused kernels (check_backend says which layouts then cannot run).
    fusions turns megatron-core's torch.compile'd kernels on (the entry asks fusions.fusions_usable).
    use_cpu_initialization creates the weights on the CPU (for CPU-only checks of the model).
    Raises CoreConfigError with megatron-core's message when it rejects the layout or shape.
    """
    te = has_transformer_engine() if transformer_engine is None else transformer_engine
    model, par, opt = config.model, config.parallelism, config.optimization
    dtype = torch.bfloat16 if opt.bf16 else torch.float32
    try:
        transformer = TransformerConfig(
            num_layers=model.num_layers,
            hidden_size=model.hidden_size,
            ffn_hidden_size=model.ffn_hidden_size,
            num_attention_heads=model.num_attention_heads,
            num_query_groups=model.num_query_groups,
            kv_channels=model.kv_channels,  # None: hidden_size / num_attention_heads
            # Llama: RMSNorm, SwiGLU (gated SiLU), no biases, no dropout; Qwen's QKV bias and QK-norm where the
            # shape has them.
            normalization="RMSNorm",
            layernorm_epsilon=model.norm_epsilon,
            gated_linear_unit=True,
            activation_func=F.silu,
            add_bias_linear=False,
            add_qkv_bias=model.add_qkv_bias,
            qk_layernorm=model.qk_layernorm,
            window_size=_window(model),
            **_experts(model, par, transformer_engine=te),
            hidden_dropout=0.0,
            attention_dropout=0.0,
            init_method_std=model.init_method_std,
            bf16=opt.bf16,
            params_dtype=dtype,
            pipeline_dtype=dtype,
            **_parallelism(model, par),
            **_kernels(transformer_engine=te, fusions=fusions),
            use_cpu_initialization=use_cpu_initialization,
        )
        optimizer = _optimizer(config, dtype)
        ddp = _ddp(config)
    except (ValueError, AssertionError) as error:
        raise CoreConfigError(f"megatron-core rejects the full-run config: {error}") from error
    return CoreConfigs(transformer, optimizer, ddp)


def _optimizer(config: FullRunConfig, dtype: torch.dtype) -> OptimizerConfig:
    """megatron-core's Adam, its state sharded over the data-parallel ranks (the distributed optimizer), the
    parameter all-gather overlapped with the next forward."""
    opt = config.optimization
    return OptimizerConfig(
        optimizer="adam",
        lr=opt.lr,
        min_lr=opt.min_lr,
        weight_decay=opt.weight_decay,
        adam_beta1=opt.adam_beta1,
        adam_beta2=opt.adam_beta2,
        adam_eps=opt.adam_eps,
        clip_grad=opt.clip_grad,
        bf16=opt.bf16,
        params_dtype=dtype,
        use_distributed_optimizer=True,
        overlap_param_gather=True,
    )


def _ddp(config: FullRunConfig) -> DistributedDataParallelConfig:
    """megatron-core's DDP: gradients reduce-scattered and parameters all-gathered for the distributed optimizer,
    both overlapped with compute."""
    par = config.parallelism
    return DistributedDataParallelConfig(
        # bf16 gradients summed over hundreds of ranks lose too many bits; reduce them in fp32.
        grad_reduce_in_fp32=config.optimization.bf16,
        # Pinned by the run, not derived from the DP size, so a resume on other nodes finds the same buckets.
        bucket_size=par.ddp_bucket_size,
        overlap_grad_reduce=True,
        overlap_param_gather=True,
        align_param_gather=par.pipeline > 1,
        use_distributed_optimizer=True,
        check_for_nan_in_grad=True,
    )


def _window(model: ModelShape) -> tuple[int, int] | None:
    """megatron-core's (left, right) window: the window_size - 1 tokens before each token, none after."""
    return None if model.window_size is None else (model.window_size - 1, 0)


def _experts(model: ModelShape, par: Parallelism, *, transformer_engine: bool) -> dict[str, Any]:
    """TransformerConfig's mixture-of-experts settings: top-k routing with the base's load-balancing loss, the
    all-to-all dispatcher, the experts split over EP x ETP; grouped GEMMs (TE's GroupedLinear) where TE is."""
    moe = model.moe
    if moe is None:
        return {}
    return {
        "num_moe_experts": moe.num_experts,
        "moe_router_topk": moe.router_topk,
        "moe_ffn_hidden_size": moe.expert_ffn_hidden_size,
        "moe_aux_loss_coeff": moe.aux_loss_coeff,
        "moe_router_load_balancing_type": "aux_loss",
        "moe_token_dispatcher_type": "alltoall",
        # Routing scores in fp32: bf16 softmax over many experts ties and flips choices (megatron-core warns from 32).
        "moe_router_dtype": "fp32",
        "moe_grouped_gemm": transformer_engine,
        "expert_model_parallel_size": par.expert,
        "expert_tensor_parallel_size": par.expert_tensor,
    }


def recompute_module(model: ModelShape) -> str:
    """What selective recomputation recomputes: the dense MLP, or the MoE layer."""
    return "mlp" if model.moe is None else "moe"


def _parallelism(model: ModelShape, par: Parallelism) -> dict[str, Any]:
    """TransformerConfig's split of the model over GPUs, its recomputation and its pipeline schedule."""
    return {
        "tensor_model_parallel_size": par.tensor,
        "pipeline_model_parallel_size": par.pipeline,
        "virtual_pipeline_model_parallel_size": par.virtual_pipeline,
        "context_parallel_size": par.context,
        "num_layers_in_first_pipeline_stage": par.first_stage_layers,
        "num_layers_in_last_pipeline_stage": par.last_stage_layers,
        "sequence_parallel": par.sequence_parallel,
        "recompute_granularity": None if par.recompute == "none" else par.recompute,
        # Selective: the MLP (its SwiGLU input is the layer's largest activation), never the attention core,
        # which every attention the entry runs computes flash-style without storing the scores; an MoE layer
        # whole ("moe": router, dispatch, experts), its routed copies being its largest.
        "recompute_modules": [recompute_module(model)] if par.recompute == "selective" else None,
        # Full recompute: every layer, one at a time, keeping only each layer's input.
        "recompute_method": "uniform" if par.recompute == "full" else None,
        "recompute_num_layers": 1 if par.recompute == "full" else None,
        # Interleaved 1F1B overlaps its p2p sends with compute; that needs unbatched p2p.
        "overlap_p2p_comm": par.virtual_pipeline is not None,
        "batch_p2p_comm": par.virtual_pipeline is None,
        # A stage's output is no longer needed once sent: freeing it saves activation memory.
        "deallocate_pipeline_outputs": True,
    }


def _kernels(*, transformer_engine: bool, fusions: bool) -> dict[str, Any]:
    """TransformerConfig's choice of attention and fused kernels, with Transformer Engine or without it."""
    te = transformer_engine
    return {
        # Flash attention 2 comes through Transformer Engine's attention; without TE the layer
        # spec puts the SDPA / flash-attn core attention (attention.py) in its place.
        "attention_backend": AttnBackend.flash if te else AttnBackend.local,
        "transformer_impl": "transformer_engine" if te else "local",
        # Only megatron-core's unfused DotProductAttention has a separate softmax to fuse; neither
        # TE's attention nor ours does.
        "masked_softmax_fusion": False,
        # The fused RoPE kernel is TE's (megatron-core refuses the setting without it), and so is the
        # fused weight-gradient GEMM that accumulates into the fp32 main grads (or Apex's).
        "apply_rope_fusion": te,
        "gradient_accumulation_fusion": te,
        # These three are megatron-core's own kernels (torch.compile'd SwiGLU, residual add and
        # vocabulary cross entropy, megatron.core.jit): they need no TE, and unfused each of them is
        # several memory-bound passes over the activations or the [s, b, vocab] logits. torch.compile needs a
        # C compiler on the node: fusions is off where the entry's preflight could not compile (fusions.py).
        "bias_activation_fusion": fusions,
        "bias_dropout_fusion": fusions,
        "cross_entropy_loss_fusion": fusions,
        # No CUDA graphs (cuda_graph_impl stays "none"). megatron-core 0.16's default scope, "full", is its deprecated
        # spelling of the whole layer, and it warned so at every plan; [] is the same scope in the current one.
        "cuda_graph_scope": [],
    }


def transformer_engine_settings(config: FullRunConfig) -> list[str]:
    """The settings of `config`, as name=value, that only Transformer Engine's layers run.

    Without TE the layers are megatron-core's local ones with the SDPA core attention: that attention
    does not split a sequence over a context-parallel group (TE's passes keys and values around the
    ring), nor does it take a sliding window (TE's attention does), and the local RMSNorm (torch.nn.RMSNorm)
    refuses sequence parallelism.
    """
    par, window = config.parallelism, config.model.window_size
    used = (
        ("model.window_size", window, window is not None),
        ("parallelism.context", par.context, par.context > 1),
        ("parallelism.sequence_parallel", par.sequence_parallel, par.sequence_parallel),
    )
    return [f"{name}={value}" for name, value, on in used if on]


def check_backend(config: FullRunConfig, *, transformer_engine: bool) -> None:
    """CoreConfigError when the layout needs Transformer Engine's layers and the run has none.

    A plan is made for the cluster and may use them; the entry refuses them on a node without TE
    before any GPU work.
    """
    needed = transformer_engine_settings(config)
    if needed and not transformer_engine:
        raise CoreConfigError(
            f"Transformer Engine's layers are needed for {', '.join(needed)}, and this node's image has none: "
            "install the full-run extra (pip install '.[full-run]'), or plan for an image without TE "
            "(sweep promote ... --no-transformer-engine, or transformer_engine: false in the cluster's YAML)"
        )
