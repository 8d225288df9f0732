"""The base class of every config object (frozen, keyword-only, unknown keys rejected) and the bounds they share."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

SHOWN_CHARACTERS = 200
"""How much of a bad value an error message quotes: enough to recognise it, never a 10 MB message."""

SEED_LIMIT = 2**32
"""Seeds are below this: numpy's generators (and Optuna's samplers, which use them) take 32-bit seeds."""

Seed = Annotated[int, Field(ge=0, lt=SEED_LIMIT)]
"""A random seed that numpy, torch and Optuna all accept: 0 <= seed < 2**32."""


class StrictConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True, allow_inf_nan=False)


def shown(value: Any, limit: int = SHOWN_CHARACTERS) -> str:
    """repr(value) for an error message, cut to `limit` characters with the full length said."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"
