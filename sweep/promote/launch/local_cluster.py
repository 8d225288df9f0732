"""A simulated multi-node Ray cluster on 127.0.0.1: real GCS, raylets, dashboard and Jobs API, one node id each.

The rehearsal and the submission tests run the full-run job path against it. Every process it
starts is tracked by Ray's own node objects and killed on exit (a reaper also kills them if this
process dies), so nothing is left behind; `ray stop` is never used because it would stop every
Ray on the machine, other users' included.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

DASHBOARD_TIMEOUT_S = 60.0
"""How long the head's Jobs API may take to answer after start; a busy 2-core machine needs ~10 s."""


@dataclass(frozen=True, kw_only=True)
class ClusterShape:
    """How many simulated nodes, and how big."""

    nodes: int = 2
    """Nodes that take training workers; at least 2, so that placement across nodes is real."""
    cpus_per_node: int = 2
    """Logical CPUs per node: one per training worker, so `cpus_per_node` workers fill a node."""

    def __post_init__(self) -> None:
        if self.nodes < 2 or self.cpus_per_node < 1:
            raise ValueError(
                f"a simulated multi-node cluster needs >= 2 nodes of >= 1 CPU, got {self.nodes=}, {self.cpus_per_node=}"
            )


def free_port() -> int:
    """A port nothing listens on now: other users may run Ray on the default ports at the same time."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalCluster:
    """`with LocalCluster(shape=...) as cluster:` a head (Jobs API, no CPUs) plus `shape.nodes` worker nodes.

    The head has no CPUs, so training workers land on the worker nodes only and a job driver on
    the head survives the loss of any worker node. Token authentication is on (RAY_AUTH_MODE=token,
    the token from Ray's usual places, generated into ~/.ray/auth_token when there is none), as
    `ray start` does by default in Ray 2.60.
    """

    def __init__(self, *, shape: ClusterShape) -> None:
        self.shape = shape
        self._cluster: Any = None
        self._nodes: list[Any] = []
        self._saved_env: dict[str, str | None] = {}
        self._temp: tempfile.TemporaryDirectory | None = None
        self.dashboard_port = 0

    @property
    def session_root(self) -> str | None:
        """The folder of Ray's sessions, logs and sockets while the cluster runs; removed on shutdown."""
        return self._temp.name if self._temp is not None else None

    @property
    def address(self) -> str:
        """The Jobs API address (the head's dashboard), as `--address` takes it."""
        return f"http://127.0.0.1:{self.dashboard_port}"

    def __enter__(self) -> Self:
        try:
            self._start()
        except BaseException:
            self.shutdown()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def _start(self) -> None:
        from ray.cluster_utils import Cluster

        # Ray's session folders hold unix sockets, whose paths may not exceed ~107 bytes: a short root. A Ray process
        # still ending as it is removed may write into it (under load, "Directory not empty"): what it leaves is
        # Ray's logs, not a reason to fail the shutdown.
        self._temp = tempfile.TemporaryDirectory(prefix="cpt-ray-", dir="/tmp", ignore_cleanup_errors=True)
        # RAY_TMPDIR keeps this cluster's address file out of /tmp/ray, where a plain ray.init()
        # elsewhere on the machine would find it and join this cluster instead of starting its own.
        # Ray resolves "this node's IP" to the machine's address, under which a process on a node
        # started at 127.0.0.1 would never find its raylet; Ray's switch for loopback-only clusters
        # (meant for laptops, despite its name) keeps every process of this cluster on 127.0.0.1.
        self._set_env(RAY_TMPDIR=self._temp.name, RAY_AUTH_MODE="token", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
        _ensure_token()
        self.dashboard_port = free_port()
        self._cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 0,
                "node_ip_address": "127.0.0.1",
                "gcs_server_port": free_port(),
                "include_dashboard": True,
                "dashboard_host": "127.0.0.1",
                "dashboard_port": self.dashboard_port,
                "dashboard_agent_listen_port": free_port(),
            },
        )
        for _ in range(self.shape.nodes):
            self.add_node()
        self._wait_for_jobs_api()

    def _set_env(self, **values: str) -> None:
        for key, value in values.items():
            self._saved_env.setdefault(key, os.environ.get(key))
            os.environ[key] = value
        _reload_ray_config()

    def _wait_for_jobs_api(self) -> None:
        from sweep.address import jobs_client

        deadline = time.monotonic() + DASHBOARD_TIMEOUT_S
        while True:
            try:
                jobs_client(self.address).list_jobs()
                return
            except Exception as exc:  # the dashboard is still starting: connection refused or 503
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"the local cluster's Jobs API at {self.address} did not answer within "
                        f"{DASHBOARD_TIMEOUT_S:.0f} s: {exc}"
                    ) from exc
                time.sleep(0.5)

    def node_ids(self) -> list[str]:
        """The live worker nodes' ids, in the order they were added."""
        return [node.node_id for node in self._nodes]

    def add_node(self) -> str:
        """Starts one more worker node (a replacement for a lost one); returns its id."""
        node = self._cluster.add_node(num_cpus=self.shape.cpus_per_node, node_ip_address="127.0.0.1")
        self._nodes.append(node)
        return node.node_id

    def kill_node(self, node_id: str) -> None:
        """Kills every process of one worker node at once, as a hardware failure would."""
        node = next(node for node in self._nodes if node.node_id == node_id)
        self._cluster.remove_node(node, allow_graceful=False)
        self._nodes.remove(node)

    def shutdown(self) -> None:
        if self._cluster is not None:
            try:
                self._cluster.shutdown()
            finally:
                self._cluster = None
                self._nodes = []
        if self._saved_env:
            for key, value in self._saved_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            self._saved_env = {}
            _reload_ray_config()
        if self._temp is not None:
            self._temp.cleanup()
            self._temp = None


def _reload_ray_config() -> None:
    """Ray caches RAY_AUTH_MODE in its config; re-read it so this process's clients follow the environment."""
    from ray._raylet import Config

    Config.initialize("")


def _ensure_token() -> None:
    """A token for the cluster and its clients, in the places Ray looks (never printed)."""
    if os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return
    if (Path.home() / ".ray" / "auth_token").is_file():
        return
    from ray._private.authentication.authentication_token_setup import (
        generate_and_save_token,
    )

    generate_and_save_token()
