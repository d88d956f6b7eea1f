"""The cluster survives its own graceful restarts: replicas converge and then go quiet.

The reproduction of issue 13, in both metadata stores: a 1-partition RF=3 topic, a few thousand
acks=all records, a graceful stop of the whole cluster (SIGTERM: brokers go through controlled
shutdown, so one of them is briefly leader under a new epoch and writes nothing under it),
restart on the same data dir. The ISR must be full again within seconds and the followers
must not loop on "diverged" answers. The unit test underneath pins the cause: a truncation at
the log end still trims the leader-epoch cache.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from conformance.protocol.records import build_batch, encode_batch
from conformance.targets.zookeeper import ZooKeeperServer
from reference_impl.launcher import Cluster
from reference_impl.log import PartitionLog, parse_header
from tests.reference.cluster.test_durability import create_topic, leader_of, wait_full_isr
from tests.reference.control_plane import STORES, metadata, new_cluster, wait_until

RECORDS = 2_000


def _batch(*values: bytes) -> tuple[bytes, object]:
    data = encode_batch(build_batch([(1_000 + i, None, v) for i, v in enumerate(values)]))
    return data, parse_header(data, 0)


def test_truncating_at_the_log_end_trims_an_epoch_that_starts_there(tmp_path: Path) -> None:
    plog = PartitionLog(tmp_path / "t-0")
    data, header = _batch(b"a", b"b")
    plog.append_as_leader(data, header, 0)
    plog.epochs.assign(1, plog.log_end_offset)  # briefly leader under epoch 1, wrote nothing
    assert plog.latest_epoch() == 1
    assert plog.truncate_to(plog.log_end_offset) == 2
    assert plog.epochs.epochs == [0] and plog.latest_epoch() == 0
    plog.close()
    reopened = PartitionLog(tmp_path / "t-0")  # and the checkpoint on disk says so too
    assert reopened.epochs.epochs == [0]
    reopened.close()


def _diverged_lines(cluster: Cluster) -> int:
    return sum(
        n.log_path.read_text(errors="replace").count("diverged at epoch")
        for n in cluster.broker_nodes()
    )


def _stop_leader_first(cluster: Cluster, topic: str) -> None:
    """Stop the brokers one at a time, each time the partition's current leader: every move
    of leadership starts an epoch at the log end that its new leader never writes under."""
    for _ in range(len(cluster.broker_nodes()) - 1):
        cluster.kill(f"broker-{leader_of(cluster, topic)}", signal.SIGTERM)
    cluster.stop()


def _check_restart(cluster: Cluster, topic: str) -> None:
    for node in cluster.nodes.values():
        assert node.proc is not None and node.proc.returncode == 0, (
            f"{node.name} was not stopped gracefully: exit {node.proc.returncode}: "
            f"{node.last_words()}"
        )
    cluster.start(timeout=60)
    wait_full_isr(cluster, topic, timeout=15)
    settled = _diverged_lines(cluster)
    time.sleep(1)  # idle brokers: the followers no longer exchange divergences
    assert _diverged_lines(cluster) == settled, "followers still loop on diverging epochs"
    assert settled < 10, f"{settled} 'diverged' lines: a loop, not a one-off truncation"


@pytest.mark.parametrize("store", STORES)
def test_graceful_stop_and_restart_the_isr_is_full_again_and_brokers_are_idle(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from confluent_kafka import Producer

    zookeeper: ZooKeeperServer | None = (
        request.getfixturevalue("zookeeper") if store == "zookeeper" else None
    )
    cluster = new_cluster(tmp_path / "cluster", store, zookeeper)
    cluster.start(timeout=60)
    try:
        create_topic(cluster, "restarted", 1)
        producer = Producer(
            {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 2}
        )
        for i in range(RECORDS):
            producer.produce("restarted", b"v%d" % i)
            producer.poll(0)
        assert producer.flush(60) == 0
        producer.close()
        cluster.stop()  # the whole cluster at once, as SIGTERM to serve does
        _check_restart(cluster, "restarted")
        _stop_leader_first(cluster, "restarted")  # the same, in the order that always hurt
        _check_restart(cluster, "restarted")
    finally:
        cluster.stop()


def test_brokers_restarting_with_the_controller_register_at_once(tmp_path: Path) -> None:
    """A broker that died (and was fenced) restarts together with the controller, and then the
    whole cluster restarts after kill -9: the new active controller counts no session for a
    broker that has not contacted it, so no new incarnation is refused as a duplicate of a live
    one (it used to wait a whole session)."""
    cluster = new_cluster(tmp_path / "cluster", "embedded", None)
    cluster.start(timeout=60)
    try:
        cluster.kill("broker-1")
        wait_until(
            lambda: 1 not in {b["NodeId"] for b in metadata(cluster, "broker-2")["Brokers"]},
            timeout=15,
        )  # fenced after its session timeout
        cluster.kill("controller-0")
        mark = cluster.nodes["broker-1"].log_path.stat().st_size
        cluster.start_node("controller-0")
        cluster.start_node("broker-1")
        cluster.wait_ready(timeout=30)
        with open(cluster.nodes["broker-1"].log_path, encoding="utf-8") as f:
            f.seek(mark)
            since = f.read()
        assert "earlier incarnation is still registered" not in since, (
            "the restarted broker was refused as a duplicate of its fenced registration"
        )
        # kill -9 of every node while all are Online: nobody has contacted the restarted
        # controller, so no registration blocks the brokers' new incarnations either
        marks = {b.name: b.log_path.stat().st_size for b in cluster.broker_nodes()}
        for node in cluster.nodes.values():
            cluster.kill(node.name)
        cluster.start(timeout=60)
        for b in cluster.broker_nodes():
            with open(b.log_path, encoding="utf-8") as f:
                f.seek(marks[b.name])
                assert "earlier incarnation is still registered" not in f.read(), (
                    f"{b.name} was refused as a duplicate after the whole cluster crashed"
                )
    finally:
        cluster.stop()
