"""Targets: the model a plan trains at full scale (its shape) and the base's own pretraining peak LR.

A target is a preset, a target YAML file, or a Hugging Face model directory whose config.json is read through its
family (sweep/promote/families/; no weights read, no code run). Presets are Meta's Llama 3.1 base models and one
size of each other family the planner maps (Qwen 2.5, Qwen 3, Mistral, Mixtral), each citing its sources in its
`source`. Qwen and Mistral AI do not publish their pretraining peak LRs: those presets leave max_lr unset and a plan
asks for --max-lr.

Llama: Shapes and peak LRs are from "The Llama 3 Herd of
Models" (Dubey et al., 2024, arXiv:2407.21783), Table 3 (layers, model dimension, FFN dimension,
attention heads, key/value heads, peak learning rate, vocabulary 128K, RoPE base 500 000) and
the released checkpoints' config.json (vocab_size 128256, rope_theta 500000, rms_norm_eps 1e-5,
rope_scaling factor 8, untied embeddings); sequences are the reference recipe's 8192 tokens. Pretraining tokens:
15.6T for the 405B (the paper); 15T for 8B and 70B (Meta's Llama 3.1 model card: "over 15 trillion tokens").
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, ValidationError

from sweep.promote.errors import PromotionError, one_line
from sweep.promote.families.registry import hf_shape, is_model_dir
from sweep.promote.families.target import Target
from sweep.promote.presets import MAX_NAME, check_value, preset_or_file
from train_entry.megatron.config import LLAMA_3_1_8B, LLAMA_3_1_70B, ModelShape, MoE


_LLAMA3_PAPER = "Llama 3 Herd of Models (arXiv:2407.21783) Table 3; Meta's Llama 3.1 config.json"

LLAMA_3_1_405B = ModelShape(
    num_layers=126,
    hidden_size=16384,
    ffn_hidden_size=53248,
    num_attention_heads=128,
    num_query_groups=8,
    vocab_size=128256,
    seq_length=8192,
)

QWEN_2_5_3B = ModelShape(
    num_layers=36,
    hidden_size=2048,
    ffn_hidden_size=11008,
    num_attention_heads=16,
    num_query_groups=2,
    vocab_size=151936,
    seq_length=8192,
    rotary_base=1_000_000,
    rope_scaling_factor=None,
    norm_epsilon=1e-6,
    untie_embeddings_and_output_weights=False,
    add_qkv_bias=True,
)
_QWEN_2_5 = (
    "Qwen/Qwen2.5-3B config.json and model card (3.09B parameters, 2.77B non-embedding; tied embeddings); "
    "Qwen2.5 Technical Report (arXiv:2412.15115) abstract: 18T pretraining tokens; peak LR not published"
)

QWEN_3_32B = ModelShape(
    num_layers=64,
    hidden_size=5120,
    ffn_hidden_size=25600,
    num_attention_heads=64,
    num_query_groups=8,
    kv_channels=128,
    vocab_size=151936,
    seq_length=8192,
    rotary_base=1_000_000,
    rope_scaling_factor=None,
    norm_epsilon=1e-6,
    qk_layernorm=True,
)
_QWEN_3 = (
    "Qwen/Qwen3-32B config.json and model card (32.8B parameters, 31.2B non-embedding); Qwen3 Technical Report "
    "(arXiv:2505.09388) abstract: about 36T pretraining tokens, QK-norm in place of QKV bias; peak LR not published"
)

MISTRAL_7B = ModelShape(
    num_layers=32,
    hidden_size=4096,
    ffn_hidden_size=14336,
    num_attention_heads=32,
    num_query_groups=8,
    vocab_size=32000,
    seq_length=8192,
    rotary_base=10_000,
    rope_scaling_factor=None,
    norm_epsilon=1e-5,
    window_size=4096,
)
_MISTRAL = (
    "Mistral 7B (arXiv:2310.06825) Table 1 (window 4096, context 8192); mistralai/Mistral-7B-v0.1 config.json; "
    "7.24B parameters in its safetensors as the Hugging Face Hub counts them; pretraining tokens and peak LR not "
    "published"
)

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

PRESETS: dict[str, Target] = {
    target.name: target
    for target in (
        Target(name="llama3.1-8b", model=LLAMA_3_1_8B, max_lr=3e-4, pretrain_tokens=15e12, source=_LLAMA3_PAPER),
        Target(name="llama3.1-70b", model=LLAMA_3_1_70B, max_lr=1.5e-4, pretrain_tokens=15e12, source=_LLAMA3_PAPER),
        Target(name="llama3.1-405b", model=LLAMA_3_1_405B, max_lr=8e-5, pretrain_tokens=15.6e12, source=_LLAMA3_PAPER),
        Target(name="qwen2.5-3b", model=QWEN_2_5_3B, pretrain_tokens=18e12, source=_QWEN_2_5),
        Target(name="qwen3-32b", model=QWEN_3_32B, pretrain_tokens=36e12, source=_QWEN_3),
        Target(name="mistral-7b", model=MISTRAL_7B, source=_MISTRAL),
        Target(name="mixtral-8x7b", model=MIXTRAL_8X7B, source=_MIXTRAL),
    )
}


TARGET_FORMS = (
    f"a preset ({', '.join(PRESETS)}), a target YAML file (the fields of sweep/promote/families/target.py), or a "
    "Hugging Face model directory (its config.json only: no weights read, no code run)"
)
"""What a target may be, as `sweep promote --help` and the error without one say it."""


def load_target(name_or_path: str, *, max_lr: float | None = None, pretrain_tokens: float | None = None) -> Target:
    """A preset by name, a Hugging Face model directory (its config.json through its family), or a target YAML
    file (keys: the fields of Target); max_lr and pretrain_tokens, when given, in place of the target's own."""
    if name_or_path not in PRESETS and is_model_dir(check_value(name_or_path, kind="target")):
        model, family = hf_shape(Path(name_or_path))
        name = re.sub(r"[^A-Za-z0-9._-]", "-", Path(name_or_path).resolve().name).lstrip("._-")
        name = name[:MAX_NAME] or "hf-target"
        source = f"{Path(name_or_path) / 'config.json'} read as {family.name}"
        target = Target(name=name, model=model, source=source)
    elif Path(name_or_path).is_dir():
        raise PromotionError(
            f"target {name_or_path} is a directory without a config.json; a Hugging Face model directory holds one"
        )
    else:
        target = preset_or_file(name_or_path, PRESETS, Target, kind="target")
    given = {key: value for key, value in (("max_lr", max_lr), ("pretrain_tokens", pretrain_tokens)) if value}
    try:
        return target.model_validate({**target.model_dump(), **given}) if given else target
    except ValidationError as error:
        raise PromotionError(f"target {target.name}: {one_line(error)}") from None
