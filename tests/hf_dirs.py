"""Hugging Face directories for tests: a real Llama of a few thousand parameters, and one that names code to run."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def save_tiny_llama(directory: Path, *, vocab_size: int = 64) -> Path:
    """A real Hugging Face Llama directory (config.json and model.safetensors); returns it."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=32,
    )  # fmt: skip
    LlamaForCausalLM(config).save_pretrained(directory)
    return directory


def plant_code(directory: Path, marker: Path, *, file: str = "config.json") -> Path:
    """Makes `directory` a Hugging Face directory whose `file` (config.json or tokenizer_config.json) names, under
    auto_map, modules of its own that write `marker` when imported, for a model type transformers does not know
    (so transformers would ask on stdin whether to run them). Returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    payload = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('the directory ran code')\n"
    for module in ("configuration_planted", "modeling_planted", "tokenization_planted"):
        (directory / f"{module}.py").write_text(payload)
    auto_map = {
        "AutoConfig": "configuration_planted.PlantedConfig",
        "AutoModelForCausalLM": "modeling_planted.PlantedModel",
        "AutoTokenizer": ["tokenization_planted.PlantedTokenizer", None],
    }
    path = directory / file
    config = json.loads(path.read_text()) if path.is_file() else {}
    path.write_text(json.dumps({**config, "model_type": "planted-lm", "auto_map": auto_map}))
    return directory
