"""Reads back what an offline W&B run wrote, from its own transaction log (`run-<id>.wandb`).

wandb 0.31 writes an offline run only into that log (no config.yaml or wandb-summary.json) and
ships no reader for it, so tests read it here: LevelDB's log format (32 KiB blocks of records with
a 7-byte header, a record split FIRST/MIDDLE/LAST across blocks) after W&B's 7-byte file header,
each record one `wandb_internal_pb2.Record` parsed with W&B's own protobuf classes.
"""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wandb.proto import wandb_internal_pb2

WANDB_SECRET = "sk-test-" + "5ec2e7" * 8
"""The W&B API key the tests' W&B sweep runs with: it must not end up in any file the sweep writes."""

UNREACHABLE_WANDB = "http://127.0.0.1:9"
"""A W&B server URL nothing listens on (the discard port): online runs fall back to offline."""

FILE_HEADER = b":W&B"
FILE_HEADER_BYTES = 7  # ":W&B", a 2-byte magic, a 1-byte version
BLOCK_BYTES = 32 * 1024
RECORD_HEADER = struct.Struct("<IHB")  # crc32, length, chunk type
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


@dataclass
class OfflineRun:
    """One offline run as W&B would upload it: its identity, config, logged history and summary."""

    path: Path
    id: str = ""
    name: str = ""
    group: str = ""
    job_type: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    step_metrics: dict[str, str] = field(default_factory=dict)
    """define_metric: metric name or glob -> the metric used as its x-axis."""
    exit_code: int | None = None

    @property
    def history_keys(self) -> set[str]:
        return {key for row in self.history for key in row if not key.startswith("_")}


def records(path: Path) -> Iterator[wandb_internal_pb2.Record]:
    data = path.read_bytes()
    assert data.startswith(FILE_HEADER), f"{path} is not a W&B transaction log"
    position, chunks = FILE_HEADER_BYTES, []
    while position + RECORD_HEADER.size <= len(data):
        left_in_block = BLOCK_BYTES - position % BLOCK_BYTES
        if left_in_block < RECORD_HEADER.size:  # the block's tail is padding
            position += left_in_block
            continue
        _, length, kind = RECORD_HEADER.unpack_from(data, position)
        start = position + RECORD_HEADER.size
        chunks.append(data[start : start + length])
        position = start + length
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(b"".join(chunks))
            chunks = []
            yield record


def _values(items: Any) -> dict[str, Any]:
    """Record items as a dict; a nested key (a logged table's fields, say) becomes nested dicts."""
    values: dict[str, Any] = {}
    for item in items:
        *parents, last = list(item.nested_key) or [item.key]
        node = values
        for parent in parents:
            node = node.setdefault(parent, {})
        node[last] = json.loads(item.value_json)
    return values


def read_run(path: Path) -> OfflineRun:
    """`path`: an offline-run-* directory."""
    (log,) = path.glob("run-*.wandb")
    run = OfflineRun(path=path)
    for record in records(log):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run.id, run.name = record.run.run_id, record.run.display_name
            run.group, run.job_type = record.run.run_group, record.run.job_type
            run.config.update(_values(record.run.config.update))
        elif kind == "config":
            run.config.update(_values(record.config.update))
        elif kind == "history":
            run.history.append(_values(record.history.item))
        elif kind == "summary":
            run.summary.update(_values(record.summary.update))
        elif kind == "metric" and record.metric.step_metric:
            run.step_metrics[record.metric.name or record.metric.glob_name] = record.metric.step_metric
        elif kind == "exit":
            run.exit_code = record.exit.exit_code
    return run


EXIT_WAIT_S = 30.0
"""How long a run's transaction log may take to end: W&B's service writes it on after `run.finish()` returns."""


def offline_runs(root: Path) -> list[OfflineRun]:
    """Every offline run under `root`, in the order their directories sort, each read once its log has its exit
    record (or after EXIT_WAIT_S, as it then stands)."""
    return [_ended(path) for path in sorted(root.rglob("offline-run-*")) if path.is_dir()]


def _ended(path: Path) -> OfflineRun:
    deadline = time.monotonic() + EXIT_WAIT_S
    while True:
        try:
            run = read_run(path)
        except (AssertionError, ValueError):  # the log not there yet, or its header not written
            if time.monotonic() >= deadline:
                raise
        else:
            if run.exit_code is not None or time.monotonic() >= deadline:
                return run
        time.sleep(0.1)
