"""A Hugging Face model or tokenizer directory, read as untrusted input: base directories are shared and downloaded.

transformers imports the Python files that a directory's config.json or tokenizer_config.json names
under `auto_map` (for a `model_type` it does not know it first asks "Do you wish to run the custom
code? [y/N]" on stdin). cpt-sweep never runs a base's code: every load passes
`trust_remote_code=False`, and a directory with an `auto_map` is refused before transformers reads
it, naming the file and the key. config.json is read like every file the tool reads back: a JSON
object of bounded size whose `vocab_size`, when given, is a positive integer. A directory whose
weights transformers cannot load, or loads only in part, is refused with one line instead of a
traceback or a model trained from random layers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from train_entry.config import shown

CONFIG_JSON = "config.json"
TOKENIZER_CONFIG_JSON = "tokenizer_config.json"
CODE_KEY = "auto_map"
"""The key by which a config names Python files of the directory for transformers to import."""
MAX_JSON_BYTES = 16 * 1024**2
"""A config.json is a few kB; a tokenizer_config.json with tens of thousands of added tokens runs to megabytes."""
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
"""What `from_pretrained` loads weights from: one file, or the index of a sharded checkpoint."""
FIRST_LINE_CHARACTERS = 300


class HfDirError(ValueError):
    """A base or tokenizer directory that cannot be used as it is; the message names the file and what is wrong."""


def refuse_remote_code(directory: Path) -> None:
    """HfDirError when config.json or tokenizer_config.json of `directory` names code for transformers to run.

    Both files matter for a tokenizer too: AutoTokenizer falls back to config.json's auto_map."""
    for name in (CONFIG_JSON, TOKENIZER_CONFIG_JSON):
        path = Path(directory) / name
        code = read_json_object(path).get(CODE_KEY) if path.is_file() else None
        if code:
            raise HfDirError(
                f"{path}: {CODE_KEY} names Python code in the directory ({shown(code)}); "
                f"cpt-sweep runs no code from a base or tokenizer directory: use a model transformers implements, "
                f"or remove {CODE_KEY} if the model is one"
            )


def model_config(directory: Path) -> dict[str, Any]:
    """config.json of a model directory, checked (a JSON object, vocab_size a positive integer, no auto_map)."""
    path = Path(directory) / CONFIG_JSON
    if not path.is_file():
        raise HfDirError(f"{directory} is not a Hugging Face model directory (no {CONFIG_JSON})")
    refuse_remote_code(directory)
    config = read_json_object(path)
    vocab_size = config.get("vocab_size")
    if vocab_size is not None and (type(vocab_size) is not int or vocab_size <= 0):
        raise HfDirError(f"{path}: vocab_size must be a positive integer, got {shown(vocab_size)}")
    if not isinstance(config.get("model_type", ""), str):
        raise HfDirError(f"{path}: model_type must be a string such as 'llama', got {shown(config['model_type'])}")
    return config


def check_model_dir(directory: Path) -> None:
    """A model directory whose config.json passes `model_config` and that holds weights."""
    model_config(directory)
    if not any((Path(directory) / name).is_file() for name in WEIGHT_FILES):
        raise HfDirError(
            f"{directory} holds no weights: none of {', '.join(WEIGHT_FILES)}; save the model with save_pretrained"
        )


def read_json_object(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_JSON_BYTES + 1)
    except OSError as error:
        raise HfDirError(f"{path}: cannot read it ({error.strerror})") from None
    if len(raw) > MAX_JSON_BYTES:
        raise HfDirError(f"{path}: larger than {MAX_JSON_BYTES // 1024**2} MiB; not a Hugging Face config")
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise HfDirError(f"{path}: not JSON ({error.__class__.__name__}: {shown(str(error))})") from None
    if not isinstance(data, dict):
        raise HfDirError(f"{path}: a JSON object is expected, got {type(data).__name__} {shown(data)}")
    return data


def first_line(error: BaseException) -> str:
    """An exception from transformers in one line: some carry a multi-line report."""
    lines = str(error).strip().splitlines()
    line = f"{type(error).__name__}: {lines[0] if lines else ''}"
    return line if len(line) <= FIRST_LINE_CHARACTERS else f"{line[:FIRST_LINE_CHARACTERS]}..."
