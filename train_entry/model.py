"""Loads the base as a Hugging Face causal LM, picks the device, dtype and attention kernel, and readies its layers.

CUDA: bf16 autocast and flash-attention 2 when the `flash-attn` package is installed (the
`gpu` extra), SDPA otherwise. CPU: fp32 and PyTorch SDPA. A model whose transformers class has no path for that
kernel runs the next it has (`attention_kernel`). Either way, on request, activation checkpointing and
torch.compile of each decoder layer (`ready_layers`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from huggingface_hub.errors import StrictDataclassError
from transformers import (
    MODEL_FOR_CAUSAL_LM_MAPPING,
    AutoConfig,
    AutoModelForCausalLM,
    PretrainedConfig,
    PreTrainedModel,
)
from transformers.utils import logging as transformers_logging

from train_entry.compiler import compile_failure
from train_entry.hf_dir import CONFIG_JSON, HfDirError, first_line, model_config

# Loading and saving a model this small is instant; transformers' progress bars would only be noise
# between the trial's own.
transformers_logging.disable_progress_bar()


@dataclass(frozen=True)
class Runtime:
    """Where and how the model runs."""

    device: torch.device
    attention: str
    """The attention kernel preferred, a transformers attn_implementation: "flash_attention_2" or "sdpa"."""
    autocast_dtype: torch.dtype | None
    """bf16 on CUDA (weights and optimizer state stay fp32); None on CPU, and for a sharded model, whose
    mixed precision FSDP applies (train_entry.sharded.fsdp)."""
    compiled: bool = False
    """torch.compile each decoder layer (`ready_layers`) and the loss (train_entry.loop.next_token_loss)."""

    @classmethod
    def cpu(cls, *, compiled: bool = False) -> Runtime:
        return cls(torch.device("cpu"), "sdpa", None, compiled and compiles("cpu"))

    @classmethod
    def detect(cls, *, compiled: bool = False) -> Runtime:
        if not torch.cuda.is_available():
            return cls.cpu(compiled=compiled)
        has_flash = importlib.util.find_spec("flash_attn") is not None
        attention = "flash_attention_2" if has_flash else "sdpa"
        return cls(torch.device("cuda"), attention, torch.bfloat16, compiled and compiles("cuda"))

    @classmethod
    def for_shard(cls, *, compiled: bool = False) -> Runtime:
        """A sharded trial's worker: the GPU its launcher made current (Ray Train and torchrun both do), no autocast."""
        detected = cls.detect(compiled=compiled)
        if detected.device.type == "cpu":
            return detected
        return cls(torch.device("cuda", torch.cuda.current_device()), detected.attention, None, detected.compiled)

    def autocast(self) -> contextlib.AbstractContextManager:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)


@functools.cache
def compiles(device_type: str) -> bool:
    """Whether torch.compile builds kernels on this node's `device_type`; where it cannot, a compiled runtime runs
    eager (slower, the same numbers) and says why once, instead of every trial failing in its first step."""
    failure = compile_failure(torch.device(device_type))
    if failure is not None:
        warnings.warn(
            f"execution.compile is on, but torch.compile cannot build a kernel on {device_type} here ({failure}): "
            "the trial runs eager; install a C compiler and Python's headers on this node",
            stacklevel=2,
        )
    return failure is None


def load_causal_lm(base_dir: Path | str, runtime: Runtime) -> PreTrainedModel:
    """Loads a saved causal LM in fp32 (master weights) on the runtime's device, running none of the directory's
    code; HfDirError when it cannot be loaded whole (see train_entry.hf_dir)."""
    base_dir = Path(base_dir)
    config = base_config(base_dir)
    try:
        with _transformers_quiet():
            model, loading = AutoModelForCausalLM.from_pretrained(
                base_dir,
                config=config,
                dtype=torch.float32,
                attn_implementation=attention_kernel(config, runtime),
                local_files_only=True,
                trust_remote_code=False,
                # Reported by the check below in one line, not as transformers' multi-line report and traceback.
                ignore_mismatched_sizes=True,
                output_loading_info=True,
            )
    except torch.OutOfMemoryError:
        raise  # the machine's limit, not the directory's fault
    except (OSError, ValueError, TypeError, RuntimeError, StrictDataclassError) as error:
        raise HfDirError(f"{base_dir}: not a loadable Hugging Face causal LM ({first_line(error)})") from None
    _check_loaded_whole(base_dir, loading)
    return model.to(runtime.device)


def ready_layers(model: PreTrainedModel, runtime: Runtime, *, activation_checkpointing: bool) -> None:
    """Activation checkpointing on request, then, when the runtime is compiled, each decoder layer compiled in place:
    the order torchtitan applies them in, before any sharding. Regional compilation: every layer of a model has the
    same code and shapes, so one graph serves them all (compiled in seconds, not the whole model's minutes); it fuses
    the RMS norms, rotary embedding, SwiGLU and residual adds that eager PyTorch runs as memory-bound kernels of
    their own."""
    if activation_checkpointing:
        _recompute_layers(model)
    if runtime.compiled:
        for layer in decoder_layers(model):
            layer.compile(dynamic=False)


def decoder_layers(model: PreTrainedModel) -> list[torch.nn.Module]:
    """The repeated blocks, in the order they run: the classes the model names as not to be split
    (`_no_split_modules`: LlamaDecoderLayer, ...), as accelerate finds them."""
    names = set(model._no_split_modules or ())
    layers = [module for module in model.modules() if type(module).__name__ in names]
    if not layers:
        raise HfDirError(f"{type(model).__name__} names no decoder layer class (_no_split_modules)")
    return layers


def _recompute_layers(model: PreTrainedModel) -> None:
    """Activation checkpointing: each decoder layer keeps its input and recomputes the rest in the backward
    (transformers' own wrapping in torch.utils.checkpoint, non-reentrant, which FSDP2 works with)."""
    non_reentrant = {"use_reentrant": False}
    # Recent transformers 5.x name it activation_checkpointing_enable (the old name a deprecated alias); earlier 5.x
    # releases (5.17 on a GPU machine we ran on) have only gradient_checkpointing_enable.
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=non_reentrant)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=non_reentrant)


def base_config(base_dir: Path | str) -> PretrainedConfig:
    """The base's config.json as transformers reads it (all of it checked, no weights read, none of the directory's
    code run: an auto_map is refused before transformers reads the directory)."""
    model_config(base_dir)
    try:
        return AutoConfig.from_pretrained(base_dir, local_files_only=True, trust_remote_code=False)
    except (OSError, ValueError, TypeError, StrictDataclassError) as error:
        raise HfDirError(f"{Path(base_dir) / CONFIG_JSON}: transformers cannot read it ({first_line(error)})") from None


def base_vocab_size(base_dir: Path) -> int | None:
    """The base's embedding rows, from its config.json; None for a config without vocab_size."""
    return getattr(base_config(base_dir), "vocab_size", None)


ATTENTION_KERNELS = ("flash_attention_2", "sdpa", "eager")
"""In the order a trial prefers them: each fused kernel first, eager (the s x s scores kept per head) last."""


def attention_kernel(config: PretrainedConfig, runtime: Runtime) -> str:
    """The runtime's kernel where the model's transformers class has a path for it, else the next one it has:
    transformers 5 gives Gemma 2, BLOOM and MPT no SDPA path, and BLOOM and MPT no flash-attention one. A class
    transformers does not know is left to from_pretrained's own error."""
    model_class = MODEL_FOR_CAUSAL_LM_MAPPING.get(type(config), None)
    if model_class is None:
        return runtime.attention
    supported = {
        "flash_attention_2": model_class._supports_flash_attn,
        "sdpa": model_class._supports_sdpa,
        "eager": True,
    }
    preferred = ATTENTION_KERNELS[ATTENTION_KERNELS.index(runtime.attention) :]
    return next(kernel for kernel in preferred if supported[kernel])


def _check_loaded_whole(base_dir: Path, loading: dict) -> None:
    """A weight of the wrong shape or none at all would be trained from its random initialisation."""
    problems = [
        f"{key} has shape {tuple(stored)} where it asks for {tuple(wanted)}"
        for key, stored, wanted in sorted(loading["mismatched_keys"])
    ] + [f"{key} is missing" for key in sorted(loading["missing_keys"])]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise HfDirError(f"{base_dir}: its weights do not fit its config.json: {problems[0]}{more}")


@contextlib.contextmanager
def _transformers_quiet():
    previous = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(previous)
