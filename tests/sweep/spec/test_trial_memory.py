"""A proxy trial's memory per GPU: the activation figure is what a real Hugging Face Llama layer keeps for its backward,
counted tensor by tensor; the GPUs a trial needs are the fewest that hold it; a trial no count of GPUs holds is
refused with its figures; the whole estimate agrees with torchtitan's published peak memory of Llama 3.1 8B."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from sweep.spec.trial_memory import activation_bytes_per_token_layer, gpus_needed, trial_memory
from train_entry.megatron.config import ModelShape
from train_entry.model import Runtime, ready_layers

LLAMA_3_1_8B = ModelShape(
    num_layers=32, hidden_size=4096, ffn_hidden_size=14336, num_attention_heads=32, num_query_groups=8,
    vocab_size=128256, seq_length=2048,
)  # fmt: skip


def kept_per_token(*, activation_checkpointing: bool) -> tuple[float, ModelShape]:
    """Bytes the first layer of a small bf16 Llama keeps for its backward per token (its weights not counted), as
    autograd's saved-tensor hooks see them, one count per storage; on CPU, SDPA runs its flash kernel."""
    h, f, heads, kv_heads, batch, seq = 256, 704, 8, 2, 3, 100
    config = LlamaConfig(
        vocab_size=1000, hidden_size=h, intermediate_size=f, num_hidden_layers=1, num_attention_heads=heads,
        num_key_value_heads=kv_heads, attn_implementation="sdpa",
    )  # fmt: skip
    model = LlamaForCausalLM(config).to(torch.bfloat16).train()
    ready_layers(model, Runtime.cpu(), activation_checkpointing=activation_checkpointing)
    weights = {parameter.untyped_storage().data_ptr() for parameter in model.parameters()}
    kept: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in weights:
            kept[storage.data_ptr()] = storage.nbytes()
        return tensor

    hidden = torch.randn(batch, seq, h, dtype=torch.bfloat16, requires_grad=True)
    positions = torch.arange(seq)[None]
    rotary = model.model.rotary_emb(hidden, positions)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        model.model.layers[0](hidden, position_embeddings=rotary, attention_mask=None, position_ids=positions)
    shape = ModelShape(
        num_layers=1, hidden_size=h, ffn_hidden_size=f, num_attention_heads=heads, num_query_groups=kv_heads,
        vocab_size=1000, seq_length=seq,
    )  # fmt: skip
    return sum(kept.values()) / (batch * seq), shape


def test_the_activation_figure_is_what_a_hugging_face_llama_layer_keeps():
    measured, shape = kept_per_token(activation_checkpointing=False)
    # The formula leaves out the few fp32 figures per token (norm scales, log-sum-exps) and RoPE's cos and sin.
    assert measured == pytest.approx(activation_bytes_per_token_layer(shape), rel=0.01)


def test_under_activation_checkpointing_a_layer_keeps_its_input():
    measured, shape = kept_per_token(activation_checkpointing=True)
    assert measured == pytest.approx(2 * shape.hidden_size, rel=0.05)


def test_an_8b_trial_needs_16_bytes_per_parameter_of_state_and_fits_no_single_gpu():
    one = trial_memory(LLAMA_3_1_8B, batch_size=8, workers=1, activation_checkpointing=True)
    assert one.params_billion == pytest.approx(8.03, abs=0.01)
    assert one.state_gb == pytest.approx(8.03 * (16 + 2), rel=0.01)  # and autocast's bf16 copy of the weights
    four = trial_memory(LLAMA_3_1_8B, batch_size=8, workers=4, activation_checkpointing=True)
    assert four.state_gb == pytest.approx(8.03 * 16 / 4, rel=0.01)
    assert four.activations_gb == pytest.approx(one.activations_gb / 4)
    assert four.total_gb == pytest.approx(four.state_gb + four.gathered_gb + four.activations_gb + four.logits_gb + 6)


def test_a_trial_takes_the_fewest_gpus_that_hold_it_and_each_takes_an_equal_part_of_the_batch():
    needed = gpus_needed(LLAMA_3_1_8B, batch_size=8, gpu_memory_gb=80, activation_checkpointing=True)
    assert needed.workers == 4 and needed.total_gb <= 80
    assert trial_memory(LLAMA_3_1_8B, batch_size=8, workers=2, activation_checkpointing=True).total_gb > 80
    # 3 GPUs would hold a trial of 12 sequences no better than 2 can: 12 splits into 4 and 6, not 3 x 4.
    odd = gpus_needed(LLAMA_3_1_8B, batch_size=12, gpu_memory_gb=60, activation_checkpointing=True)
    assert 12 % odd.workers == 0


def test_a_trial_no_count_of_gpus_holds_is_refused_with_its_figures():
    with pytest.raises(ValueError, match=r"does not fit GPUs of 24 GB: .* GB per GPU over 8 GPU\(s\) for a 8\.03B"):
        gpus_needed(LLAMA_3_1_8B, batch_size=8, gpu_memory_gb=24, activation_checkpointing=False)


GB_PER_GIB = 2**30 / 1e9
"""torchtitan reports torch.cuda.max_memory_reserved() in GiB."""


def test_the_estimate_matches_torchtitans_published_peak_memory_of_llama_3_1_8b_under_fsdp2():
    """torchtitan's performance notes (docs/performance.md at commit eaea6f6 of github.com/pytorch/torchtitan)
    measure the peak memory an H100 of 96 GB reserves training Llama 3.1 8B with FSDP2 (torch of 2024-12-23). Its
    model is its own Llama, not Hugging Face's, run with Float8 linears and torch.compile; its loss takes the bf16
    logits' fp32 copy, as ours does."""
    # Table 2, row 1: FSDP 8, one sequence of 32768 tokens per GPU, full activation checkpointing: 83.9 GiB.
    full = trial_memory(LLAMA_3_1_8B.model_copy(update={"seq_length": 32768}), batch_size=8, workers=8,
                        activation_checkpointing=True)  # fmt: skip
    assert full.total_gb / GB_PER_GIB == pytest.approx(83.9, rel=0.05)

    # Tables 1 and 3: two sequences of 8192 tokens per GPU, selective activation checkpointing (it keeps some of a
    # layer's activations), FSDP over 8 GPUs: 82.4 GiB (77.0 compiled); over 128: 67.0 GiB (62.0 compiled).
    sequences = LLAMA_3_1_8B.model_copy(update={"seq_length": 8192})
    for workers, measured in ((8, (82.4, 77.0)), (128, (67.0, 62.0))):
        least, most = (
            trial_memory(sequences, batch_size=2 * workers, workers=workers, activation_checkpointing=keep).total_gb
            for keep in (True, False)
        )
        assert least / GB_PER_GIB < min(measured) and max(measured) < most / GB_PER_GIB
    # 16 times the GPUs: what sharding saves of the weights, gradients and Adam state, 15.4 GiB (15.0 compiled).
    eight, many = (trial_memory(sequences, batch_size=2 * workers, workers=workers, activation_checkpointing=True)
                   for workers in (8, 128))  # fmt: skip
    assert (eight.total_gb - many.total_gb) / GB_PER_GIB == pytest.approx(15.2, rel=0.1)
