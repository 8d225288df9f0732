"""Files written whole or not at all.

A reader (a browser reloading a report, `sweep status` during a run) never sees half a file, and a
process killed mid-write leaves the previous version in place: the data goes to a hidden sibling
that is then renamed over the target, and a rename within one directory is atomic on POSIX.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_whole(path: Path, data: str | bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    os.replace(tmp, path)


def write_json(path: Path, value: Any) -> None:
    write_whole(path, json.dumps(value, indent=2) + "\n")
