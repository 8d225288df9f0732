"""Pretraining the built-in base `builtin:tiny-llama` on the general side, cached with a manifest."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from train_entry.builtin_base import EVAL_SEQUENCES, BuiltinBaseConfig
from train_entry.data.tokenizer import load_tokenizer, megatron_tokenizer
from train_entry.loop import fit, sequence_losses
from train_entry.mix import general_side
from train_entry.model import Runtime
from train_entry.trial_config import CorpusPrefixes, TrialStatus

if TYPE_CHECKING:
    from train_entry.data.blend import TokenStream


def tiny_llama(config: BuiltinBaseConfig, *, vocab_size: int, eos_token_id: int) -> LlamaForCausalLM:
    """A freshly initialised Llama (RMSNorm, SwiGLU, RoPE, grouped-query attention)."""
    llama = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_kv_heads,
        max_position_embeddings=config.seq_len,
        rope_theta=10_000.0,
        tie_word_embeddings=True,  # half the parameters of a model this small sit in the embedding
        bos_token_id=eos_token_id,
        eos_token_id=eos_token_id,
    )
    torch.manual_seed(config.seed)
    return LlamaForCausalLM(llama)


DIVERGENCE_FACTOR = 3.0
"""Pretraining that blows up past this multiple of its first loss fails: base.max_lr is too high."""


def pretrain(
    config: BuiltinBaseConfig,
    *,
    max_lr: float,
    tokenizer_dir: Path,
    train: CorpusPrefixes,
    valid: CorpusPrefixes,
    non_english_share: float,
    output_dir: Path,
    on_step: Callable[[int, float], None] | None = None,
) -> dict[str, Any]:
    """Pretrains tiny-llama on the general side at max_lr and saves it with its tokenizer.

    Returns the manifest's measurements: final train loss and the held-out general and domain
    losses (the latter show how new the domain is to the base).
    """
    # Imported here: the blend imports megatron-core (seconds), which a sweep whose base is cached never needs.
    from train_entry.data.blend import build_stream, build_validation_sets

    started = time.perf_counter()
    runtime = Runtime.detect()
    tokenizer = load_tokenizer(tokenizer_dir)
    model = tiny_llama(config, vocab_size=len(tokenizer), eos_token_id=tokenizer.eos_token_id).to(runtime.device)
    megatron = megatron_tokenizer(tokenizer_dir)
    index_dir = output_dir / "megatron_index"
    stream = build_stream(
        train,
        general_side(non_english_share),
        num_samples=config.pretrain_steps * config.batch_size,
        seq_len=config.seq_len,
        seed=config.seed,
        tokenizer=megatron,
        cache_dir=index_dir,
    )
    final = _train(model, stream, config, runtime, max_lr=max_lr, on_step=on_step)
    sets = build_validation_sets(
        valid,
        non_english_share,
        num_sequences=EVAL_SEQUENCES,
        seq_len=config.seq_len,
        seed=config.seed,
        tokenizer=megatron,
        cache_dir=index_dir,
    )
    shutil.rmtree(index_dir)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    return {
        "parameters": sum(p.numel() for p in model.parameters()),
        "final": {
            **final,
            "general_loss": sequence_losses(model, *sets.general, runtime, config.batch_size).mean().item(),
            "domain_loss": sequence_losses(model, *sets.domain, runtime, config.batch_size).mean().item(),
        },
        "wall_seconds": round(time.perf_counter() - started, 1),
    }


def _train(
    model: LlamaForCausalLM,
    stream: TokenStream,
    config: BuiltinBaseConfig,
    runtime: Runtime,
    *,
    max_lr: float,
    on_step: Callable[[int, float], None] | None,
) -> dict[str, float]:
    """Trains config.pretrain_steps steps at peak LR max_lr; returns the final train_loss and tokens_seen.
    RuntimeError when the training does not complete (a diverging loss: base.max_lr is too high)."""
    final: dict[str, float] = {}

    def evaluate(step: int, tokens_seen: int, train_loss: float, lr: float) -> bool:
        final.update(train_loss=train_loss, tokens_seen=tokens_seen)
        return False

    outcome = fit(
        model,
        stream,
        config,
        runtime,
        steps=config.pretrain_steps,
        batch_size=config.batch_size,
        peak_lr=max_lr,
        eval_interval=config.pretrain_steps,
        divergence_factor=DIVERGENCE_FACTOR,
        evaluate=evaluate,
        on_step=on_step,
    )
    if outcome.status is not TrialStatus.COMPLETED:
        raise RuntimeError(f"pretraining the built-in base failed: {outcome.reason}; lower base.max_lr")
    return final
