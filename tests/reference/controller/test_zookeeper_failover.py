"""ZooKeeper mode: one cluster id for a cluster started at once, a controller change with
mutations continuing, and lost sessions survived.

Two controller processes compete for ``/controller``; killing the active one (kill -9) makes the
other active, and admin mutations sent to brokers keep working (the brokers rediscover the
controller, KIP-590). A node paused for longer than its ZooKeeper session loses the session:
a broker re-creates ``/brokers/ids/N`` when it resumes and is Online again; a paused controller
loses ``/controller`` to the other, and when it resumes it finds it is no longer active.
"""

from __future__ import annotations

import json
import signal
import time
import uuid

from kazoo.client import KazooClient

from conformance.protocol import ApiKey
from conformance.protocol.framing import encode_request
from reference_impl.cluster_id import read_meta_properties
from reference_impl.launcher import Cluster
from reference_impl.principal import address_bytes, serialize
from tests.reference.control_plane import (
    CODEC,
    FAST,
    call,
    metadata,
    new_cluster,
    scrape,
    topic_body,
    wait_until,
)


def zk_client(cluster: Cluster) -> tuple[KazooClient, str]:
    connect = cluster.metadata_store.removeprefix("zookeeper://")
    hosts, _, chroot = connect.partition("/")
    client = KazooClient(hosts=hosts)
    client.start(timeout=10)
    return client, "/" + chroot


def active_controller(cluster: Cluster) -> str:
    client, root = zk_client(cluster)
    try:
        broker_id = json.loads(client.get(root + "/controller")[0])["brokerid"]
    finally:
        client.stop()
        client.close()
    return f"controller-{broker_id}"


def create_through(cluster: Cluster, broker: str) -> float:
    """Create a topic through ``broker``; seconds until it answered successfully."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    start = time.monotonic()
    body = call(
        cluster.broker_address(cluster.nodes[broker]),
        ApiKey.CREATE_TOPICS,
        7,
        topic_body(name, 2, 2),
    )
    assert body["Topics"][0]["ErrorCode"] == 0, body
    return time.monotonic() - start


def is_active(cluster: Cluster, name: str) -> bool:
    samples = scrape(cluster.nodes[name].config.metrics_port)
    return samples[("kafka_controller_active", frozenset())] == 1


def test_zookeeper_mode_survives_controller_changes_and_lost_sessions(tmp_path, zookeeper) -> None:
    # two controllers and three brokers started at once against an empty chroot: one id
    cluster = new_cluster(tmp_path, "zookeeper", zookeeper, controllers=2)
    cluster.start()
    try:
        ids = {
            read_meta_properties(n.config.data_dir)["cluster.id"] for n in cluster.nodes.values()
        }
        ids |= {metadata(cluster, b.name)["ClusterId"] for b in cluster.broker_nodes()}
        assert len(ids) == 1
        controller_change(cluster)
        broker_session_loss(cluster)
        controller_session_loss(cluster)
        assert len(metadata(cluster, "broker-1")["Topics"]) == 6
    finally:
        for node in cluster.nodes.values():
            node.signal(signal.SIGCONT)
        cluster.stop()


def controller_change(cluster: Cluster) -> None:
    """kill -9 of the active controller: the other takes over, mutations continue."""
    create_through(cluster, "broker-1")
    first = active_controller(cluster)
    (other,) = [c.name for c in cluster.controller_nodes() if c.name != first]
    assert is_active(cluster, first) and not is_active(cluster, other)
    cluster.kill(first)  # its ZooKeeper session ends when ZooKeeper notices
    took = create_through(cluster, "broker-2")
    assert active_controller(cluster) == other and is_active(cluster, other)
    assert took < FAST["zk_session_timeout_ms"] / 1000 + 10
    cluster.start_node(first)  # back, as a standby
    wait_until(lambda: cluster.nodes[first].runtime().get("pid") == cluster.nodes[first].pid)
    create_through(cluster, "broker-3")
    assert active_controller(cluster) == other and not is_active(cluster, first)
    # KIP-590.R5: a standby answers an Envelope (from a broker principal) with NOT_CONTROLLER
    inner = encode_request(CODEC, ApiKey.CREATE_TOPICS, 7, 1, "c", topic_body("never", 1, 1))
    envelope = {
        "RequestData": inner,
        "RequestPrincipal": serialize("User:ANONYMOUS"),
        "ClientHostAddress": address_bytes("127.0.0.1:1"),
    }
    standby = cluster.nodes[first].config.listeners[0]
    assert call((standby.host, standby.port), ApiKey.ENVELOPE, 0, envelope)["ErrorCode"] == 41


PAUSE = (FAST["zk_session_timeout_ms"] + 1000) / 1000


def broker_session_loss(cluster: Cluster) -> None:
    """A paused broker's session expires; resumed, it registers /brokers/ids/N again."""
    client, root = zk_client(cluster)
    try:
        owner = client.exists(root + "/brokers/ids/1").ephemeralOwner
        cluster.kill("broker-1", signal.SIGSTOP)
        time.sleep(PAUSE)
        cluster.kill("broker-1", signal.SIGCONT)
        wait_until(
            lambda: (s := client.exists(root + "/brokers/ids/1")) and s.ephemeralOwner != owner
        )
    finally:
        client.stop()
        client.close()
    cluster.wait_ready(timeout=30)
    create_through(cluster, "broker-1")


def controller_session_loss(cluster: Cluster) -> None:
    """A paused active controller loses /controller; resumed, it is no longer active."""
    first = active_controller(cluster)
    (other,) = [c.name for c in cluster.controller_nodes() if c.name != first]
    cluster.kill(first, signal.SIGSTOP)
    time.sleep(PAUSE)
    wait_until(lambda: active_controller(cluster) == other, timeout=20)
    create_through(cluster, "broker-2")
    cluster.kill(first, signal.SIGCONT)
    wait_until(lambda: not is_active(cluster, first), timeout=20)
    create_through(cluster, "broker-3")
    assert active_controller(cluster) == other
