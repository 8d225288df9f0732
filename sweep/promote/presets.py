"""A preset by name or a YAML file: how targets and clusters are named on the command line."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from sweep.files.config_file import load_config
from sweep.promote.errors import PromotionError

Config = TypeVar("Config", bound=BaseModel)


def preset_or_file(value: str, presets: dict[str, Config], model: type[Config], *, kind: str) -> Config:
    """presets[value], or `value` read as a YAML file of `model` (errors name the file, key and value)."""
    if value in presets:
        return presets[value]
    path = Path(value)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return load_config(path, model, kind=kind)
    raise PromotionError(
        f"unknown {kind} {value!r}; presets: {', '.join(presets)}, or a {kind} YAML file (see search_spaces/{kind}s/)"
    )
