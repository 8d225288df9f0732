"""What the fuzz tests share: their settings, random damage to a valid file, and paths into a JSON document."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from train_entry.file_format import FORMAT_KEY, WRITER_KEY

SHORT = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
"""A few seconds a surface, in the default suite."""
LONG = settings(
    max_examples=int(os.environ.get("CPT_SWEEP_FUZZ_EXAMPLES", "2000")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
"""The slow-marked run: CPT_SWEEP_FUZZ_EXAMPLES examples (2000 by default)."""
Path_ = tuple[str | int, ...]
"""Where a value is in a JSON document: its keys and list indices."""
STAMP = (FORMAT_KEY, WRITER_KEY)
"""The format version (tests/cli/test_corrupt_files.py changes it) and the writer, said in messages, never trusted."""


@st.composite
def damaged(draw, valid: bytes) -> bytes:
    """`valid` with a few bytes overwritten, a run cut out or inserted, or cut short; or random bytes."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=4096))
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["overwrite", "cut", "insert", "truncate"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "overwrite" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[at : at + draw(st.integers(1, 64))]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=64))
        else:
            del data[at:]
    return bytes(data)


def leaves(value: Any, at: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every value in the JSON tree with its path; of a list, its first element only."""
    if at:
        yield at, value
    if isinstance(value, dict):
        for key, child in value.items():
            if at or key not in STAMP:
                yield from leaves(child, (*at, key))
    elif isinstance(value, list) and value:
        yield from leaves(value[0], (*at, 0))


def replaced(data: Any, at: Path_, value: Any) -> Any:
    copy = json.loads(json.dumps(data))
    parent = copy
    for part in at[:-1]:
        parent = parent[part]
    parent[at[-1]] = value
    return copy
