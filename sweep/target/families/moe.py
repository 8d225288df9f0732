"""Mixtures of experts: Mixtral (model_type mixtral: 8 experts of intermediate_size, top-2, Mistral's attention)
and Qwen 3 MoE (model_type qwen3_moe: many narrow experts of moe_intermediate_size, QK-norm). Every layer is an
MoE layer; top-k weights are a softmax over the chosen experts' logits (Mixtral's, Qwen 3 MoE's with
norm_topk_prob), megatron-core's default routing. Mixtral 8x7B is a preset (pretraining tokens and peak LR not
published: a plan of it asks for --max-lr)."""

from __future__ import annotations

from pydantic import Field

from sweep.target.families.family import DecoderConfig, Family, decoder_shape, refuse
from sweep.target.families.mistral import MISTRAL_7B
from sweep.target.target import Target
from train_entry.megatron.config import ModelShape, MoE


class MixtralConfig(DecoderConfig):
    num_local_experts: int = Field(gt=1, le=1 << 16)
    num_experts_per_tok: int = Field(gt=0, le=1 << 16)
    router_aux_loss_coef: float = Field(0.0, ge=0.0)
    sliding_window: int | None = Field(None, gt=0)


def mixtral_shape(config: MixtralConfig, seq_length: int) -> ModelShape:
    moe = MoE(
        num_experts=config.num_local_experts,
        router_topk=config.num_experts_per_tok,
        expert_ffn_hidden_size=config.intermediate_size,
        aux_loss_coeff=config.router_aux_loss_coef,
    )
    return decoder_shape(config, seq_length, moe=moe, window_size=config.sliding_window)


class Qwen3MoeConfig(DecoderConfig):
    num_experts: int = Field(gt=1, le=1 << 16)
    num_experts_per_tok: int = Field(gt=0, le=1 << 16)
    moe_intermediate_size: int = Field(gt=0, le=1 << 24)
    router_aux_loss_coef: float = Field(0.0, ge=0.0)
    norm_topk_prob: bool = False
    decoder_sparse_step: int = Field(1, ge=1)
    mlp_only_layers: list[int] = Field(default_factory=list)
    use_sliding_window: bool = False


def qwen3_moe_shape(config: Qwen3MoeConfig, seq_length: int) -> ModelShape:
    if not config.norm_topk_prob:
        raise refuse("norm_topk_prob", False, "megatron-core renormalises the top-k weights (its default routing)")
    if config.decoder_sparse_step != 1 or config.mlp_only_layers:
        key, value = ("mlp_only_layers", config.mlp_only_layers) if config.mlp_only_layers else (
            "decoder_sparse_step", config.decoder_sparse_step)  # fmt: skip
        raise refuse(key, value, "the planner's MoE shape has experts in every layer")
    if config.use_sliding_window or config.attention_bias:
        key = "use_sliding_window" if config.use_sliding_window else "attention_bias"
        raise refuse(key, True, "Qwen 3 MoE's released bases have neither; the planner maps neither")
    moe = MoE(
        num_experts=config.num_experts,
        router_topk=config.num_experts_per_tok,
        expert_ffn_hidden_size=config.moe_intermediate_size,
        aux_loss_coeff=config.router_aux_loss_coef,
    )
    return decoder_shape(config, seq_length, qk_layernorm=True, moe=moe)


# Mixtral 8x7B is Mistral 7B's attention and widths with eight experts per layer, RoPE base 1e6, no window.
MIXTRAL_8X7B = MISTRAL_7B.model_copy(
    update={
        "rotary_base": 1_000_000,
        "window_size": None,
        "moe": MoE(num_experts=8, router_topk=2, expert_ffn_hidden_size=14336, aux_loss_coeff=0.02),
    }
)
_MIXTRAL = (
    "Mixtral of Experts (arXiv:2401.04088) Table 1 (8 experts, top 2); mistralai/Mixtral-8x7B-v0.1 config.json "
    "(router_aux_loss_coef 0.02); Mistral AI's announcement: 46.7B total, 12.9B active parameters per token; "
    "pretraining tokens and peak LR not published"
)

MIXTRAL = Family(
    name="Mixtral",
    model_types=("mixtral",),
    config=MixtralConfig,
    shape=mixtral_shape,
    presets=(Target(name="mixtral-8x7b", model=MIXTRAL_8X7B, source=_MIXTRAL),),
)
QWEN3_MOE = Family(name="Qwen 3 MoE", model_types=("qwen3_moe",), config=Qwen3MoeConfig, shape=qwen3_moe_shape)
