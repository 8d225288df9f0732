"""The families the planner maps, their presets, and a Hugging Face directory's config.json read through the one
that matches."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from sweep.target.errors import TargetError
from sweep.target.families import llama, mistral, moe, qwen
from sweep.target.families.family import Family, UnmappableConfig, refuse
from sweep.target.target import Target
from train_entry.config import shown
from train_entry.hf_dir import CONFIG_JSON, HfDirError, model_config
from train_entry.megatron.config import ModelShape

FAMILIES: tuple[Family, ...] = (llama.FAMILY, qwen.QWEN2, qwen.QWEN3, mistral.FAMILY, moe.MIXTRAL, moe.QWEN3_MOE)
"""Every family the planner maps: adding one is its module and its entry here."""

PRESETS: dict[str, Target] = {target.name: target for family in FAMILIES for target in family.presets}
"""Every family's presets by name (`--target NAME`)."""

REFERENCE_SEQ_LENGTH = 8192
"""The reference recipe's sequence; a base whose max_position_embeddings is shorter trains at that instead."""


def is_model_dir(value: str) -> bool:
    """Whether `value` names a directory holding a config.json (a Hugging Face model directory)."""
    return (Path(value) / CONFIG_JSON).is_file()


def hf_shape(directory: Path) -> tuple[ModelShape, Family]:
    """The shape of a Hugging Face model directory's config.json (no weights read, no code run: an auto_map is
    refused) and the family that read it; TargetError naming the file and the key it cannot map."""
    path = Path(directory) / CONFIG_JSON
    try:
        raw = model_config(Path(directory))
    except HfDirError as error:
        raise TargetError(str(error)) from None
    model_type = raw.get("model_type")
    family = next((family for family in FAMILIES if model_type in family.model_types), None)
    try:
        if family is None:
            mapped = ", ".join(t for family in FAMILIES for t in family.model_types)
            raise refuse("model_type", model_type, f"no family the planner maps reads it (mapped: {mapped})")
        config = family.config.model_validate(raw)
        seq_length = min(REFERENCE_SEQ_LENGTH, config.max_position_embeddings)
        return family.shape(config, seq_length), family
    except UnmappableConfig as error:
        raise UnmappableConfig(f"{path}: {error}") from None
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        key = ".".join(str(part) for part in first["loc"]) or error.title
        raise TargetError(f"{path}: {key}: {first['msg']}, got {shown(first['input'])}") from None
