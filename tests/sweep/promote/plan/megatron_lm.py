"""Megatron-LM's own training package, where it is importable, for the tests that read a plan's arguments with it.

megatron.training is not on PyPI (the megatron-core wheel holds only megatron.core): a test that needs it runs where a
checkout's megatron folder is on PYTHONPATH (docs/full-run.md) and is skipped elsewhere with the reason the import
failed: the package absent, a module it imports that is not installed (triton), or a Python too old for the
checkout (Megatron-LM main imports typing.override, Python 3.12's).
"""

from __future__ import annotations

import importlib
import sys
import traceback
from argparse import Namespace
from types import ModuleType, SimpleNamespace

import pytest

H100 = SimpleNamespace(name="NVIDIA H100 80GB HBM3", major=9, minor=0, total_memory=80 * 2**30)
"""What validate_args asks of the device (its architecture, for the features it gates), as the plan's nodes answer."""


def megatron_training(module: str = "megatron.training.arguments") -> ModuleType:
    """Megatron-LM's `module`, or the test skipped with what is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        pytest.skip(why_not_importable(error))


def why_not_importable(error: ImportError) -> str:
    """One line saying why Megatron-LM's training package did not import, naming the missing module."""
    where = _failing_import(error)
    if isinstance(error, ModuleNotFoundError) and error.name in ("megatron", "megatron.training"):
        return (
            "Megatron-LM's megatron.training is not on the path (it is not on PyPI: put a checkout's megatron "
            "folder on PYTHONPATH, docs/full-run.md)"
        )
    if isinstance(error, ModuleNotFoundError) and error.name:
        return (
            f"Megatron-LM's megatron.training is on the path but imports {error.name!r}, which is not installed "
            f"({where}): pip install {error.name.split('.')[0]}"
        )
    version = ".".join(map(str, sys.version_info[:3]))
    hint = ""
    if error.name == "typing" and sys.version_info < (3, 12):
        hint = (
            "; the typing names it wants (override) are Python 3.12's: this Megatron-LM (main) needs Python 3.12, "
            "the tag core_v0.16.1 imports on 3.11"
        )
    return f"Megatron-LM's megatron.training does not import on Python {version}: {error} ({where}){hint}"


def _failing_import(error: ImportError) -> str:
    """file:line of the import statement that failed, the last frame of the traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "at the first import"


def parsed_args(arguments: ModuleType, tokens: list[str], *, world_size: int, monkeypatch) -> Namespace:
    """Megatron-LM's parse_args and validate_args over `tokens` (a pretrain_gpt.py command line), on a rank of
    `world_size`; without CUDA, validate_args is told the device is an H100, as on the nodes the plan is for."""
    import torch

    if not torch.cuda.is_available():
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda *_: H100)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *_: (H100.major, H100.minor))
    monkeypatch.setattr("sys.argv", ["pretrain_gpt.py", *tokens])
    environment = {"WORLD_SIZE": str(world_size), "RANK": "0", "LOCAL_RANK": "0", "CUDA_DEVICE_MAX_CONNECTIONS": "1"}
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    args = arguments.parse_args()
    arguments.validate_args(args, {})
    return args


def padded_vocab_size(args: Namespace, tokenizer_length: int) -> int:
    """The embedding rows Megatron-LM builds for a tokenizer of `tokenizer_length` tokens under `args`, by its own
    code: main's megatron.core.tokenizers.utils.build_tokenizer._set_padded_vocab_size (when args.pad_vocab_size,
    as its build_tokenizer calls it), else core_v0.16.1's megatron.training.tokenizer.tokenizer
    ._vocab_size_with_padding, which its build_tokenizer calls only when --padded-vocab-size left the size unset."""
    global_vars = megatron_training("megatron.training.global_vars")
    args = Namespace(**vars(args))
    if global_vars.build_tokenizer.__module__ == "megatron.core.tokenizers.utils.build_tokenizer":  # main
        if args.pad_vocab_size:
            sys.modules[global_vars.build_tokenizer.__module__]._set_padded_vocab_size(
                args, SimpleNamespace(vocab_size=tokenizer_length)
            )
        return args.padded_vocab_size
    tokenizer = megatron_training("megatron.training.tokenizer.tokenizer")
    if args.padded_vocab_size is not None:
        return args.padded_vocab_size
    return tokenizer._vocab_size_with_padding(tokenizer_length, args, logging_enabled=False)
