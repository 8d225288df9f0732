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


LLAMA_FAMILY = {
    # The config.json fields that size each model, as Meta's Hugging Face repositories give them.
    "Llama-3.2-1B": {"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
                     "intermediate_size": 8192, "tie_word_embeddings": True},
    "Llama-3.2-3B": {"hidden_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 24, "num_key_value_heads": 8,
                     "intermediate_size": 8192, "tie_word_embeddings": True},
    "Llama-3.1-8B": {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                     "intermediate_size": 14336, "tie_word_embeddings": False},
}  # fmt: skip
QWEN_FAMILY = {
    # The config.json fields that size each model, as Qwen's Hugging Face repositories give them: four sizes over a
    # decade and a half of non-embedding parameters (0.36 B to 6.5 B), which a ladder needs and Llama 3 below 70 B
    # (1 B to 8 B, 7x) does not have.
    "Qwen2.5-0.5B": {"hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
                     "intermediate_size": 4864, "vocab_size": 151936, "tie_word_embeddings": True},
    "Qwen2.5-1.5B": {"hidden_size": 1536, "num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2,
                     "intermediate_size": 8960, "vocab_size": 151936, "tie_word_embeddings": True},
    "Qwen2.5-3B": {"hidden_size": 2048, "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 2,
                   "intermediate_size": 11008, "vocab_size": 151936, "tie_word_embeddings": True},
    "Qwen2.5-7B": {"hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
                   "intermediate_size": 18944, "vocab_size": 152064, "tie_word_embeddings": False},
}  # fmt: skip


def llama_family_dirs(root: Path) -> Path:
    """Stand-ins for the Llama 3 family's base directories under root/<name> (`family_dirs`). Returns root."""
    family = {name: {"model_type": "llama", "vocab_size": 128256, **fields} for name, fields in LLAMA_FAMILY.items()}
    return family_dirs(root, family, architecture="LlamaForCausalLM")


def qwen_family_dirs(root: Path) -> Path:
    """Stand-ins for the Qwen2.5 family's base directories under root/<name> (`family_dirs`). Returns root."""
    family = {name: {"model_type": "qwen2", **fields} for name, fields in QWEN_FAMILY.items()}
    return family_dirs(root, family, architecture="Qwen2ForCausalLM")


def family_dirs(root: Path, family: dict[str, dict], *, architecture: str) -> Path:
    """Stand-ins for a model family's base directories under root/<name>: each model's real config.json, and an
    empty weights file (a spec's checks look for one and never read it). Returns root."""
    for name, fields in family.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(json.dumps({"architectures": [architecture], **fields}))
        (folder / "model.safetensors").write_bytes(b"")
    return root
