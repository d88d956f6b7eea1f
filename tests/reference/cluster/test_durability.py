"""No acknowledged record is lost when brokers die: kill -9 of a leader in the middle of an
acks=all produce, and kill -9 / restart of every broker in turn under load.

A Jepsen-style history check: the producer (confluent-kafka, idempotent, acks=all) records
every acknowledgement (value → partition, offset); once the cluster has settled, the log is
read back whole and every acknowledged value must be there exactly once, at the offset it was
acknowledged with; no value appears twice; offsets are contiguous from the log start; and
every replica holds the same batches below the high watermark.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reference_impl.launcher import Cluster
from reference_impl.log import LogConfig, PartitionLog, parse_header

FAST = {"heartbeat_interval_ms": 100, "session_timeout_ms": 1500, "request_timeout_ms": 15000}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path / "cluster", brokers=3, overrides=FAST)
    c.start(timeout=60)
    try:
        yield c
    finally:
        c.stop()


class History:
    """What a producer sent and what the cluster acknowledged, produced from a thread."""

    def __init__(self, cluster: Cluster, topic: str, partitions: int) -> None:
        from confluent_kafka import Producer

        self.topic, self.partitions = topic, partitions
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed: dict[bytes, str] = {}
        self.sent = 0
        self._stop = threading.Event()
        self.producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 2,
                "message.timeout.ms": 60_000,
                "retry.backoff.ms": 50,
                "topic.metadata.refresh.interval.ms": 500,
            }
        )
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err, msg) -> None:
        if err is None:
            self.acked[msg.value()] = (msg.partition(), msg.offset())
        else:
            self.failed[msg.value()] = str(err)

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            value = b"value-%08d" % i
            try:
                self.producer.produce(
                    self.topic, value, partition=i % self.partitions, on_delivery=self._delivered
                )
                i += 1
                self.sent = i
            except BufferError:
                pass
            self.producer.poll(0)
            if i % 200 == 0:  # about 20,000 records/s: a history that stays quick to check
                time.sleep(0.01)

    def start(self) -> History:
        self._thread.start()
        return self

    def wait_for_acks(self, n: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while len(self.acked) < n:
            assert time.monotonic() < deadline, f"only {len(self.acked)} acknowledgements"
            time.sleep(0.05)

    def finish(self) -> None:
        self._stop.set()
        self._thread.join(10)
        try:
            assert self.producer.flush(90) == 0
        finally:
            self.producer.close()  # its threads go now, not after the cluster is gone

    def abandon(self) -> None:
        """Stop producing and drop what was not delivered (the cluster is gone)."""
        self._stop.set()
        self._thread.join(10)
        self.producer.purge()
        self.producer.flush(5)  # serves the purged messages' delivery reports
        self.producer.close()


def wait_full_isr(cluster: Cluster, topic: str, timeout: float = 60) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            md = admin.list_topics(topic, timeout=2).topics[topic]
            if md.partitions and all(
                p.leader >= 0 and len(p.isrs) == 3 for p in md.partitions.values()
            ):
                return
        except Exception:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{topic}: the ISR did not recover in {timeout} s")


def create_topic(cluster: Cluster, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 3)])[topic].result(15)
    wait_full_isr(cluster, topic)


def leader_of(cluster: Cluster, topic: str, partition: int = 0) -> int:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    return admin.list_topics(topic, timeout=5).topics[topic].partitions[partition].leader


def read_back(cluster: Cluster, topic: str, partitions: int) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of every partition, from the log start to the high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "history-check",
            "enable.auto.commit": False,
        }
    )
    try:
        ends = {
            p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            for p in range(partitions)
        }
        c.assign([TopicPartition(topic, p, lo) for p, (lo, _) in ends.items()])
        out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + 60
        while any((out[p][-1][0] + 1 if out[p] else ends[p][0]) < ends[p][1] for p in out):
            assert time.monotonic() < deadline, "could not read up to the high watermark"
            for m in c.consume(5000, 0.5):
                assert m.error() is None, m.error()
                out[m.partition()].append((m.offset(), m.value()))
        return out
    finally:
        c.close()


def check_history(h: History, read: dict[int, list[tuple[int, bytes]]]) -> None:
    seen: dict[bytes, tuple[int, int]] = {}
    for p, recs in read.items():
        offsets = [o for o, _ in recs]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets))) if offsets else True, (
            f"partition {p}: offsets are not contiguous"
        )
        for o, v in recs:
            assert v not in seen, f"{v!r} read twice: {seen[v]} and {(p, o)}"
            seen[v] = (p, o)
    lost = {v: at for v, at in h.acked.items() if v not in seen}
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {next(iter(lost.items()))}"
    moved = {v: (at, seen[v]) for v, at in h.acked.items() if seen[v] != at}
    assert not moved, f"acknowledged at one offset, read at another: {list(moved.items())[:3]}"
    assert not h.failed, f"{len(h.failed)} records failed: {next(iter(h.failed.items()))}"


def check_replicas_agree(
    cluster: Cluster, topic: str, partitions: int, read: dict[int, list[tuple[int, bytes]]]
) -> None:
    """With the cluster stopped: every replica holds the same batches below the HW."""
    cluster.stop()
    for p in range(partitions):
        hw = read[p][-1][0] + 1 if read[p] else 0
        logs = []
        for node in cluster.broker_nodes():
            d = Path(node.config.data_dir) / "logs" / f"{topic}-{p}"
            plog = PartitionLog(d, LogConfig())
            data, offset = [], plog.log_start_offset
            while offset < hw:
                chunk = plog.read(offset, 1 << 20, hw)
                assert chunk, f"broker {node.name} lacks {topic}-{p} offsets from {offset}"
                data.append(chunk)
                pos = 0
                while pos < len(chunk):
                    h = parse_header(chunk, pos)
                    offset, pos = h.next_offset, pos + h.length
            plog.close()
            logs.append(data)
        joined = [b"".join(x) for x in logs]
        assert joined[0] == joined[1] == joined[2], f"{topic}-{p}: replicas differ below the HW"


def test_kill_9_of_the_leader_during_acks_all_produce_loses_nothing(cluster: Cluster) -> None:
    topic = "jepsen"
    create_topic(cluster, topic, 1)
    h = History(cluster, topic, 1).start()
    h.wait_for_acks(3_000)
    victim = f"broker-{leader_of(cluster, topic)}"
    cluster.kill(victim)  # SIGKILL, mid-stream
    acked_at_kill = len(h.acked)
    h.wait_for_acks(acked_at_kill + 3_000, timeout=60)  # a new leader took over
    assert leader_of(cluster, topic) != int(victim.split("-")[1])
    cluster.start_node(victim)
    cluster.wait_ready(brokers=[victim])
    wait_full_isr(cluster, topic)
    h.wait_for_acks(len(h.acked) + 1_000)
    h.finish()
    read = read_back(cluster, topic, 1)
    check_history(h, read)
    assert len(h.acked) == h.sent
    check_replicas_agree(cluster, topic, 1, read)


def test_kill_9_and_restart_of_every_broker_in_turn_under_load(cluster: Cluster) -> None:
    topic = "rolling"
    create_topic(cluster, topic, 3)
    h = History(cluster, topic, 3).start()
    h.wait_for_acks(2_000)
    for node in cluster.broker_nodes():
        cluster.kill(node.name)
        before = len(h.acked)
        h.wait_for_acks(before + 1_000, timeout=60)  # the others carry on without it
        cluster.start_node(node.name)
        cluster.wait_ready(brokers=[node.name])
        wait_full_isr(cluster, topic)
    h.wait_for_acks(len(h.acked) + 1_000)
    h.finish()
    read = read_back(cluster, topic, 3)
    check_history(h, read)
    check_replicas_agree(cluster, topic, 3, read)
