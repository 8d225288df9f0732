"""Loads the base as a Hugging Face causal LM and picks the device, dtype and attention kernel.

CUDA: bf16 autocast and flash-attention 2 when the `flash-attn` package is installed (the
`gpu` extra), SDPA otherwise. CPU: fp32 and PyTorch SDPA.
"""

from __future__ import annotations

import contextlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, PreTrainedModel
from transformers.utils import logging as transformers_logging

# Loading and saving a model this small is instant; transformers' progress bars would only be noise
# between the trial's own.
transformers_logging.disable_progress_bar()


@dataclass(frozen=True)
class Runtime:
    """Where and how the model runs."""

    device: torch.device
    attention: str
    """A transformers attn_implementation: "flash_attention_2" or "sdpa"."""
    autocast_dtype: torch.dtype | None
    """bf16 on CUDA (weights and optimizer state stay fp32); None on CPU."""

    @classmethod
    def detect(cls) -> Runtime:
        if not torch.cuda.is_available():
            return cls(torch.device("cpu"), "sdpa", None)
        has_flash = importlib.util.find_spec("flash_attn") is not None
        return cls(torch.device("cuda"), "flash_attention_2" if has_flash else "sdpa", torch.bfloat16)

    def autocast(self) -> contextlib.AbstractContextManager:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)


def load_causal_lm(base_dir: Path | str, runtime: Runtime) -> PreTrainedModel:
    """Loads a saved causal LM in fp32 (master weights) on the runtime's device."""
    model = AutoModelForCausalLM.from_pretrained(
        base_dir,
        dtype=torch.float32,
        attn_implementation=runtime.attention,
        local_files_only=True,
    )
    return model.to(runtime.device)
