"""How a trial loads its model and readies its layers: the attention kernel, activation checkpointing and regional
compilation. The compiled trial's numbers are checked on CUDA (tests/train_entry/test_cuda.py): compiling on CPU
takes Inductor's C++ build ~20 s."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, BloomConfig, Gemma2Config, LlamaConfig, LlamaForCausalLM

from train_entry.hf_dir import HfDirError
from train_entry.loop import next_token_loss
from train_entry.model import Runtime, attention_kernel, decoder_layers, load_causal_lm, ready_layers


def llama() -> LlamaForCausalLM:
    config = LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=3, num_attention_heads=2,
        num_key_value_heads=1,
    )  # fmt: skip
    with torch.device("meta"):
        return LlamaForCausalLM(config)


@pytest.fixture(autouse=True)
def a_node_that_compiles(monkeypatch):
    """Skips the compile preflight (a real C++ build, ~18 s here): tests/train_entry/test_compiler.py checks it."""
    monkeypatch.setattr("train_entry.model.compiles", lambda device_type: True)


# transformers 5 gives Gemma 2 no SDPA path (its logits soft-capping) and BLOOM (ALiBi) neither SDPA nor flash
# attention: both are families a ladder is built from (Gemma 2 2B, 9B, 27B; BLOOM 560M to 176B).
SMALL = {"vocab_size": 64, "hidden_size": 16, "num_attention_heads": 2}
GEMMA2 = Gemma2Config(**SMALL, intermediate_size=32, num_hidden_layers=1, num_key_value_heads=1, head_dim=8)
BLOOM = BloomConfig(**SMALL, n_layer=1)
FLASH = Runtime(torch.device("cuda"), "flash_attention_2", torch.bfloat16)


@pytest.mark.parametrize(
    ("config", "on_cpu", "with_flash_attn"),
    [
        (LlamaConfig(**SMALL), "sdpa", "flash_attention_2"),
        (GEMMA2, "eager", "flash_attention_2"),
        (BLOOM, "eager", "eager"),
    ],
    ids=["llama", "gemma2", "bloom"],
)
def test_a_model_runs_the_preferred_attention_kernel_its_class_has_else_the_next(config, on_cpu, with_flash_attn):
    assert attention_kernel(config, Runtime.cpu()) == on_cpu
    assert attention_kernel(config, FLASH) == with_flash_attn


@pytest.mark.parametrize("config", [GEMMA2, BLOOM], ids=["gemma2", "bloom"])
def test_a_base_without_an_sdpa_path_loads_and_trains_with_eager_attention(config, tmp_path):
    """Such a base was refused as "not a loadable Hugging Face causal LM (... does not support ... sdpa ...)"."""
    AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path)
    model = load_causal_lm(tmp_path, Runtime.cpu())
    assert model.config._attn_implementation == "eager"
    tokens = torch.randint(0, 64, (2, 9))
    next_token_loss(model, tokens[:, :-1], tokens[:, 1:]).backward()


def compiled_modules(model: torch.nn.Module) -> list[torch.nn.Module]:
    return [module for module in model.modules() if module._compiled_call_impl is not None]


@pytest.mark.parametrize("activation_checkpointing", [False, True])
def test_a_compiled_runtime_compiles_each_decoder_layer_in_place_and_nothing_else(activation_checkpointing):
    model = llama()
    ready_layers(model, Runtime.cpu(compiled=True), activation_checkpointing=activation_checkpointing)
    assert compiled_modules(model) == list(model.model.layers)
    assert all(layer.gradient_checkpointing is activation_checkpointing for layer in model.model.layers)


def test_an_eager_runtime_compiles_nothing():
    model = llama()
    ready_layers(model, Runtime.cpu(), activation_checkpointing=True)
    assert compiled_modules(model) == []


def test_a_model_naming_no_decoder_layer_class_is_refused_naming_its_class():
    model = llama()
    model._no_split_modules = []
    with pytest.raises(HfDirError, match=r"LlamaForCausalLM names no decoder layer class \(_no_split_modules\)"):
        decoder_layers(model)


def test_every_decoder_layer_of_a_compiled_model_runs_one_graph(monkeypatch):
    """Dynamo alone (CompileCounter, no Inductor): a guard on anything per layer, as a KV cache's layer index was,
    would compile a graph per layer and, past torch's recompile limit of 8, run the rest eagerly."""
    from torch._dynamo.testing import CompileCounter

    counter, compile_in_place = CompileCounter(), torch.nn.Module.compile
    monkeypatch.setattr(torch.nn.Module, "compile", lambda self, **options: compile_in_place(self, backend=counter))
    torch._dynamo.reset()
    model = LlamaForCausalLM(llama().config)
    ready_layers(model, Runtime.cpu(compiled=True), activation_checkpointing=False)
    tokens = torch.randint(0, 64, (2, 9))
    next_token_loss(model, tokens[:, :-1], tokens[:, 1:]).backward()
    assert counter.frame_count == 1
