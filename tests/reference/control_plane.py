"""Helpers for the control-plane tests: clusters, wire calls, metrics.

``new_cluster`` makes a ``reference_impl.launcher.Cluster`` with short heartbeat and session
timings, in either metadata store (each ZooKeeper-mode cluster under its own chroot of the
session's ZooKeeper, ``conformance.targets.zookeeper.ZooKeeperServer``).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from conformance.client.wire import Connection
from conformance.protocol import Codec
from conformance.targets.zookeeper import ZooKeeperServer
from reference_impl.launcher import Cluster

CODEC = Codec.from_specs()
#: timings for tests: heartbeats every 100 ms, fenced after 1.5 s of silence
FAST = {
    "heartbeat_interval_ms": 100,
    "session_timeout_ms": 1500,
    "zk_session_timeout_ms": 1500,
    "controlled_shutdown_timeout_ms": 5000,
    "request_timeout_ms": 15000,
}
STORES = ("embedded", "zookeeper")
_chroots = itertools.count(1)


def store_url(store: str, zookeeper: ZooKeeperServer | None) -> str:
    if store == "embedded":
        return "embedded"
    assert zookeeper is not None
    return f"zookeeper://{zookeeper.connect}/t{os.getpid()}-{next(_chroots)}"


def new_cluster(
    data_dir: Path, store: str, zookeeper: ZooKeeperServer | None, **kwargs: Any
) -> Cluster:
    overrides = {**FAST, **kwargs.pop("overrides", {})}
    return Cluster(
        data_dir, metadata_store=store_url(store, zookeeper), overrides=overrides, **kwargs
    )


# --- the wire -----------------------------------------------------------------------------


def run(coro: Any, timeout: float = 60) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def acall(host: str, port: int, api_key: int, version: int, body: dict) -> dict:
    async with await Connection.open(host, port, codec=CODEC, timeout=5) as conn:
        return (await conn.request(api_key, version, body, timeout=20)).body


def call(address: tuple[str, int] | str, api_key: int, version: int, body: dict) -> dict:
    """One request on a fresh connection; the decoded response body."""
    if isinstance(address, str):
        host, _, port = address.rpartition(":")
        address = (host, int(port))
    return run(acall(address[0], address[1], api_key, version, body))


def api_versions(address: tuple[str, int]) -> dict[int, tuple[int, int]]:
    async def go() -> dict[int, tuple[int, int]]:
        async with await Connection.open(*address, codec=CODEC, timeout=5) as conn:
            return await conn.api_versions()

    return run(go())


def metadata(cluster: Cluster, broker: str, version: int = 12, topics: Any = None) -> dict:
    return call(cluster.broker_address(cluster.nodes[broker]), 3, version, {"Topics": topics})


def controller_address(cluster: Cluster, index: int = 0) -> tuple[str, int]:
    c = cluster.controller_nodes()[index].config.listeners[0]
    return c.host, c.port


def scrape(port: int) -> dict[tuple[str, frozenset], float]:
    """Prometheus samples of a node: (name, labels) -> value."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def wait_until(check: Callable[[], Any], timeout: float = 15.0, interval: float = 0.05) -> Any:
    """Poll ``check`` until it returns something truthy (which is returned)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = check()
            if last:
                return last
        except (OSError, ConnectionError, TimeoutError) as e:
            last = e
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in {timeout} s (last: {last!r})")
        time.sleep(interval)


def topic_body(name: str, partitions: int = 3, rf: int = 2, configs: dict | None = None) -> dict:
    return {
        "Topics": [
            {
                "Name": name,
                "NumPartitions": partitions,
                "ReplicationFactor": rf,
                "Assignments": [],
                "Configs": [{"Name": k, "Value": v} for k, v in (configs or {}).items()],
            }
        ],
        "timeoutMs": 10000,
    }
