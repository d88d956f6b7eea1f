"""Helpers for the control-plane tests: a real ZooKeeper, clusters, wire calls, metrics.

``ZooKeeperServer`` starts the Debian package's ZooKeeper exactly as DESIGN.md says (standalone,
``clientPortAddress=127.0.0.1``, ready when ``srvr`` answers ``Mode: standalone``) on a free
loopback port and stops it by pid. ``start_cluster`` starts a ``reference_impl.launcher.Cluster``
with short heartbeat and session timings, in either metadata store (each ZooKeeper cluster under
its own chroot).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from conformance.client.wire import Connection
from conformance.protocol import Codec
from reference_impl.launcher import Cluster, free_port

CODEC = Codec.from_specs()
ZK_CLASSPATH = ":".join(
    [
        "/etc/zookeeper/conf",
        "/usr/share/java/zookeeper.jar",
        "/usr/share/java/slf4j-log4j12.jar",
        "/usr/share/java/log4j-1.2.jar",
    ]
)
#: timings for tests: heartbeats every 100 ms, fenced after 1.5 s of silence
FAST = {
    "heartbeat_interval_ms": 100,
    "session_timeout_ms": 1500,
    "zk_session_timeout_ms": 2000,
    "controlled_shutdown_timeout_ms": 5000,
    "request_timeout_ms": 15000,
}
STORES = ("embedded", "zookeeper")
_chroots = itertools.count(1)


class ZooKeeperServer:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        if not Path("/usr/share/java/zookeeper.jar").exists():
            raise RuntimeError(
                "ZooKeeper is not installed (Debian package zookeeper): run ./dev.sh setup"
            )
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        cfg = self.workdir / "zoo.cfg"
        cfg.write_text(
            "\n".join(
                [
                    "tickTime=200",
                    f"dataDir={data}",
                    f"clientPort={self.port}",
                    "clientPortAddress=127.0.0.1",
                    "minSessionTimeout=400",
                    "maxSessionTimeout=20000",
                    "maxClientCnxns=0",
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=srvr,ruok",
                ]
            )
            + "\n"
        )
        log = open(self.workdir / "zookeeper.log", "ab")
        self.proc = subprocess.Popen(
            [
                "java",
                "-cp",
                ZK_CLASSPATH,
                "org.apache.zookeeper.server.ZooKeeperServerMain",
                str(cfg),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited: see {self.workdir / 'zookeeper.log'}")
            if "Mode: standalone" in self.four_letter("srvr"):
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("ZooKeeper did not answer srvr in time")

    def four_letter(self, word: str) -> str:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(word.encode())
                chunks = []
                while chunk := s.recv(4096):
                    chunks.append(chunk)
                return b"".join(chunks).decode(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


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
