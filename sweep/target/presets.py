"""A preset by name or a YAML file: how targets and clusters are named on the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, TypeVar

from pydantic import BaseModel, Field

from sweep.files.config_file import load_config
from sweep.target.errors import TargetError
from train_entry.config import shown

Config = TypeVar("Config", bound=BaseModel)
MAX_NAME = 90
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
"""A target's or cluster's short name: both go into a plan's id, which names its folder (at most 200 characters)."""
MAX_VALUE_CHARACTERS = 4096
"""A preset's name or a file's path (PATH_MAX on Linux): a longer value is neither, and asking the file system about
it is an OSError (a name too long)."""


def preset_or_file(value: str, presets: dict[str, Config], model: type[Config], *, kind: str) -> Config:
    """presets[value], or `value` read as a YAML file of `model` (errors name the file, key and value)."""
    if value in presets:
        return presets[value]
    path = Path(check_value(value, kind=kind))
    if path.suffix in (".yaml", ".yml") or path.exists():
        return load_config(path, model, kind=kind)
    raise TargetError(
        f"unknown {kind} {shown(value)}; presets: {', '.join(presets)}, or a {kind} YAML file (see "
        f"search_spaces/{kind}s/)"
    )


def check_value(value: str, *, kind: str) -> str:
    """`value` when it can name a preset or a path at all; TargetError (its length, the value shortened) when it is
    longer than any path, or names one the file system refuses to look at."""
    if len(value) > MAX_VALUE_CHARACTERS:
        raise TargetError(
            f"{kind} {shown(value)} is {len(value):,} characters: not a preset's name nor a path (at most "
            f"{MAX_VALUE_CHARACTERS:,})"
        )
    try:
        Path(value).exists()
    except OSError as error:
        raise TargetError(f"{kind} {shown(value)}: cannot look it up ({error.strerror or error})") from None
    return value
