"""Released base models as the families' and promotion's tests read them: each config.json's shape keys (the others,
token ids and dtypes, change no shape) and the length of the tokenizer released with it, len(tokenizer), which is
what Megatron-LM pads its vocabulary from. A module of its own (not conftest) so that tests import it by a name no
other test folder uses."""

from __future__ import annotations

from typing import Any

_QWEN = {"rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "hidden_act": "silu"}
_MISTRAL = {"rms_norm_eps": 1e-05, "hidden_act": "silu", "max_position_embeddings": 32768}
_LLAMA_3_1 = {
    "model_type": "llama", "num_key_value_heads": 8, "vocab_size": 128256, "rope_theta": 500000.0,
    "rms_norm_eps": 1e-05, "max_position_embeddings": 131072, "hidden_act": "silu", "tie_word_embeddings": False,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
}  # fmt: skip

CONFIGS: dict[str, dict[str, Any]] = {
    # Named as the presets are where one is the same model (sweep.target.families.registry.PRESETS).
    "llama3.1-8b": {
        "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        **_LLAMA_3_1,
    },
    "llama3.1-70b": {
        "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80, "num_attention_heads": 64,
        **_LLAMA_3_1,
    },
    "llama3.1-405b": {
        "hidden_size": 16384, "intermediate_size": 53248, "num_hidden_layers": 126, "num_attention_heads": 128,
        **_LLAMA_3_1,
    },
    "qwen2.5-0.5b": {
        "model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
        "num_attention_heads": 14, "num_key_value_heads": 2, "max_position_embeddings": 32768, "vocab_size": 151936,
        "tie_word_embeddings": True, "use_sliding_window": False, "sliding_window": 32768, **_QWEN,
    },
    "qwen2.5-3b": {
        "model_type": "qwen2", "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
        "num_attention_heads": 16, "num_key_value_heads": 2, "max_position_embeddings": 32768, "vocab_size": 151936,
        "tie_word_embeddings": True, "use_sliding_window": False, "sliding_window": 32768, **_QWEN,
    },
    "qwen2.5-7b": {
        "model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
        "num_attention_heads": 28, "num_key_value_heads": 4, "max_position_embeddings": 131072, "vocab_size": 152064,
        "tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 131072, **_QWEN,
    },
    "qwen2.5-72b": {
        "model_type": "qwen2", "hidden_size": 8192, "intermediate_size": 29568, "num_hidden_layers": 80,
        "num_attention_heads": 64, "num_key_value_heads": 8, "max_position_embeddings": 131072, "vocab_size": 152064,
        "tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 131072, **_QWEN,
    },
    "qwen3-4b": {
        "model_type": "qwen3", "hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 36,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40960,
        "vocab_size": 151936, "tie_word_embeddings": True, "attention_bias": False, **_QWEN,
    },
    "qwen3-8b": {
        "model_type": "qwen3", "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40960,
        "vocab_size": 151936, "tie_word_embeddings": False, "attention_bias": False, **_QWEN,
    },
    "qwen3-32b": {
        "model_type": "qwen3", "hidden_size": 5120, "intermediate_size": 25600, "num_hidden_layers": 64,
        "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40960,
        "vocab_size": 151936, "tie_word_embeddings": False, "attention_bias": False, **_QWEN,
    },
    "qwen3-30b-a3b": {
        "model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
        "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
        "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": True, "decoder_sparse_step": 1,
        "mlp_only_layers": [], "router_aux_loss_coef": 0.001, "max_position_embeddings": 40960, "vocab_size": 151936,
        "tie_word_embeddings": False, **_QWEN,
    },
    "mistral-7b": {  # v0.1
        "model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "rope_theta": 10000.0, "sliding_window": 4096,
        "vocab_size": 32000, "tie_word_embeddings": False, **_MISTRAL,
    },
    "mistral-7b-v0.3": {
        "model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "rope_theta": 1000000.0, "sliding_window": None,
        "vocab_size": 32768, "tie_word_embeddings": False, **_MISTRAL,
    },
    "mixtral-8x7b": {
        "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "rope_theta": 1e6, "sliding_window": None,
        "num_local_experts": 8, "num_experts_per_tok": 2, "router_aux_loss_coef": 0.02, "vocab_size": 32000,
        **_MISTRAL,
    },
}  # fmt: skip

TOKENIZER_LENGTHS: dict[str, int] = {
    # Llama 3 and 3.1: 128,000 BPE tokens and 256 special ones (meta-llama/llama3 llama/tokenizer.py,
    # num_reserved_special_tokens = 256; the Llama 3 paper's "vocabulary with 128K tokens"): as many as the embedding.
    **dict.fromkeys(("llama3.1-8b", "llama3.1-70b", "llama3.1-405b"), 128256),
    # Qwen2.5: 151,643 BPE tokens and added tokens 151643 to 151664 (<|endoftext|> ... <|file_sep|>) in its
    # tokenizer_config.json; len(tokenizer) 151,665 (arcee-ai/mergekit issue #425), against 151,936 rows (0.5B, 3B)
    # and 152,064 (7B, 72B): Qwen pads its embedding for its own training (QwenLM/Qwen3 issues #29, #292).
    **dict.fromkeys(("qwen2.5-0.5b", "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-72b"), 151665),
    # Qwen3: the same BPE, with added tokens up to 151668 (</think>) in Qwen/Qwen3-*'s tokenizer_config.json.
    **dict.fromkeys(("qwen3-4b", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b"), 151669),
    # Mistral 7B v0.1 and Mixtral 8x7B: a 32,000-piece SentencePiece model; v0.3 "extended vocabulary to 32768"
    # (mistralai/Mistral-7B-v0.3's model card).
    **dict.fromkeys(("mistral-7b", "mixtral-8x7b"), 32000),
    "mistral-7b-v0.3": 32768,
}
