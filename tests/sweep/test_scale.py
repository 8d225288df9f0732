"""N, the ladder's parameter axis, counted from a Hugging Face config.json as transformers builds the model: also for
a family whose heads are not hidden_size / num_attention_heads wide (Qwen 3 0.6B and 4B: 128 where that gives 64
and 80), which were counted 20 % and 10 % short."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

from sweep.scale import non_embedding_params
from sweep.spec.shapes import HfModelConfig

CONFIGS = {
    # The sizing fields of the models' released config.json files.
    "Qwen3-0.6B": {"model_type": "qwen3", "hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16,
                   "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072},
    "Qwen3-4B": {"model_type": "qwen3", "hidden_size": 2560, "num_hidden_layers": 36, "num_attention_heads": 32,
                 "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 9728},
    "Qwen3-8B": {"model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32,
                 "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 12288},
    "Llama-3.2-1B": {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
                     "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 8192},
}  # fmt: skip


def built_non_embedding_params(fields: dict) -> int:
    """What transformers builds, less the input embedding (the vocabulary is 1 row, tied)."""
    config = AutoConfig.for_model(**fields, vocab_size=1, tie_word_embeddings=True)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters()) - model.get_input_embeddings().weight.numel()


@pytest.mark.parametrize("name", CONFIGS)
def test_n_of_a_hugging_face_base_is_what_transformers_builds(name):
    fields = CONFIGS[name]
    ours = non_embedding_params(HfModelConfig(**fields).model_shape(vocab_size=1, seq_len=1, untied=True))
    # Qwen 3's per-head query and key norms (256 parameters a layer) are the only weights the Llama formula leaves out.
    assert ours == pytest.approx(built_non_embedding_params(fields), rel=1e-4)
