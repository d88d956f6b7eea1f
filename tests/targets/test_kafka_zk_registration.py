"""ZooKeeper mode: a restarted broker counts as started once its /brokers/ids znode is its own,
not when it listens (a broker listens before it registers and exits when its killed
predecessor's znode is still there: 2.8.2's cluster-kill, issue 41). A real ZooKeeper; the
process standing for the broker is only watched for its exit."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conformance.targets import TargetError
from conformance.targets.kafka import KafkaTarget, Node
from conformance.targets.zookeeper import ZooKeeperServer

ZNODE = "/kafka/brokers/ids/1"


@pytest.fixture(scope="module")
def zookeeper():
    server = ZooKeeperServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def znodes(zookeeper):
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=zookeeper.connect)
    zk.start(timeout=10)
    zk.ensure_path("/kafka/brokers/ids")
    yield zk
    if zk.exists(ZNODE):
        zk.delete(ZNODE)
    zk.stop()
    zk.close()


def broker_json(timestamp_ms: int) -> bytes:
    return json.dumps({"version": 5, "host": "127.0.0.1", "timestamp": str(timestamp_ms)}).encode()


def target_and_node(zookeeper, tmp_path: Path, cmd: list[str]) -> tuple[KafkaTarget, Node]:
    t = KafkaTarget(version="2.8.2", store="zookeeper", zookeeper=f"{zookeeper.connect}/kafka")
    node = Node(1, "broker", 0, tmp_path / "broker-1.properties", tmp_path / "broker-1.log")
    node.proc = subprocess.Popen(cmd)
    return t, node


def test_the_predecessors_znode_is_not_taken_for_a_start(zookeeper, znodes, tmp_path) -> None:
    since = int(time.time() * 1000)
    znodes.create(ZNODE, broker_json(since - 5000), ephemeral=True)  # the killed broker's
    t, node = target_and_node(
        zookeeper, tmp_path, [sys.executable, "-c", "import time; time.sleep(30)"]
    )

    def register() -> None:  # the new process registers once the old session has ended
        time.sleep(1.0)
        znodes.set(ZNODE, broker_json(int(time.time() * 1000)))

    writer = threading.Thread(target=register)
    start = time.monotonic()
    writer.start()
    try:
        t._wait_registered(node, since, time.monotonic() + 20)
        assert time.monotonic() - start >= 0.9, "returned on the predecessor's znode"
    finally:
        writer.join()
        node.proc.kill()
        node.proc.wait()


def test_a_broker_exiting_on_the_znode_is_a_failed_start(zookeeper, znodes, tmp_path) -> None:
    since = int(time.time() * 1000)
    znodes.create(ZNODE, broker_json(since - 5000), ephemeral=True)
    # as 2.8.2 does on NodeExists: it listened, then exits
    t, node = target_and_node(zookeeper, tmp_path, [sys.executable, "-c", "raise SystemExit(1)"])
    with pytest.raises(TargetError, match="exited with code 1"):
        t._wait_registered(node, since, time.monotonic() + 20)
