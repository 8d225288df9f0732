"""How a trial readies its model's layers: activation checkpointing and regional compilation. The compiled trial's
numbers are checked on CUDA (tests/train_entry/test_cuda.py): compiling on CPU takes Inductor's C++ build ~20 s."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from train_entry.hf_dir import HfDirError
from train_entry.loop import next_token_loss
from train_entry.model import Runtime, decoder_layers, ready_layers


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
