"""Real consumers in consumer groups on a 3-broker reference cluster.

* kafka-python, confluent-kafka and aiokafka consumers share one group (round-robin assignor,
  which all three speak) on a 6-partition topic: the assignment is balanced, every record is
  consumed exactly once between them, and the group rebalances when one leaves and when it
  comes back; committed offsets carry the positions across (nothing is read twice).
* confluent-kafka's and kafka-python's admin clients list, describe, read the offsets of and
  delete the group.
* kill -9 of the group's coordinator: the group moves to the new leader of its
  ``__consumer_offsets`` partition with its committed offsets, and a new consumer resumes
  exactly where the old one committed.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conformance.client.wire import Connection
from conformance.protocol import ApiKey, Codec
from conformance.protocol.internal_topics import OFFSETS_TOPIC
from reference_impl.groups.placement import partition_for
from reference_impl.launcher import Cluster

PARTITIONS = 6
OFFSETS_PARTITIONS = 10
PER_PHASE = 3000
FAST = {"heartbeat_interval_ms": 100, "session_timeout_ms": 2000}
GROUPS = {
    "settings": {
        "groups": {
            "initial_rebalance_delay_ms": 300,
            "offsets_topic_partitions": OFFSETS_PARTITIONS,
        }
    }
}
#: what every consumer is told: quick heartbeats, so that rebalances are noticed at once
HEARTBEAT_MS, SESSION_MS = 200, 6000
CODEC = Codec.from_specs()


def new_cluster(path: Path) -> Cluster:
    cluster = Cluster(path, brokers=3, overrides=FAST, broker_overrides=GROUPS)
    cluster.start(timeout=60)
    try:
        create_offsets_topic(cluster)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def create_offsets_topic(cluster: Cluster) -> None:
    """The first FindCoordinator creates ``__consumer_offsets`` (through the controller) and
    is answered COORDINATOR_NOT_AVAILABLE; soon every broker names the same coordinator.

    Done once, from one broker, before clients start: concurrent CreateTopics of one name
    from several brokers are not yet serialised by the controller.
    """
    first = ask(cluster, "broker-1", ApiKey.FIND_COORDINATOR, 3, {"Key": "probe", "KeyType": 0})
    assert first is not None and first["ErrorCode"] == 15  # COORDINATOR_NOT_AVAILABLE

    def agreed() -> bool:
        names = {coordinator_of(cluster, b.name, "probe") for b in cluster.broker_nodes()}
        return len(names) == 1 and names.pop() > 0

    wait_until("every broker names the coordinator", agreed)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = new_cluster(tmp_path / "cluster")
    try:
        yield c
    finally:
        c.stop()


def wait_until(what: str, condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.05)


def create_topic(cluster: Cluster, name: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, PARTITIONS, 3)], operation_timeout=10)[name].result(15)

    def led() -> bool:
        md = admin.list_topics(name, timeout=5).topics[name]
        return len(md.partitions) == PARTITIONS and all(
            p.leader >= 0 for p in md.partitions.values()
        )

    wait_until(f"{name} has leaders", led)


def produce(cluster: Cluster, topic: str, tag: str, n: int = PER_PHASE) -> set[bytes]:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    errors: list = []
    values = [f"{tag}-{i}".encode() for i in range(n)]
    try:
        for i, v in enumerate(values):
            p.produce(
                topic, v, partition=i % PARTITIONS, on_delivery=lambda e, m: e and errors.append(e)
            )
            p.poll(0)
        assert p.flush(30) == 0 and errors == []
    finally:
        p.close()  # its threads go now, not after the cluster is gone
    return set(values)


class Member(threading.Thread):
    """One consumer of the group in its own thread: poll, commit, then record what it got."""

    def __init__(self, name: str, cluster: Cluster, group: str, topic: str) -> None:
        super().__init__(name=name, daemon=True)
        self.cluster, self.group, self.topic = cluster, group, topic
        self.got: list[bytes] = []
        self.assignment: frozenset[int] = frozenset()
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.consume()
        except BaseException as e:  # reported by the test through check()
            self.error = e

    def consume(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)
        assert not self.is_alive(), f"{self.name} did not stop"
        self.check()

    def check(self) -> None:
        if self.error is not None:
            raise AssertionError(f"{self.name} failed: {self.error!r}") from self.error


class KafkaPythonMember(Member):
    def consume(self) -> None:
        from kafka import KafkaConsumer
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        c = KafkaConsumer(
            bootstrap_servers=self.cluster.bootstrap_servers,
            group_id=self.group,
            client_id=self.name,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            heartbeat_interval_ms=HEARTBEAT_MS,
            session_timeout_ms=SESSION_MS,
            partition_assignment_strategy=[RoundRobinPartitionAssignor],
        )
        c.subscribe([self.topic])
        try:
            while not self.stopping.is_set():
                batch = c.poll(timeout_ms=100)
                if batch:
                    c.commit()
                    self.got += [r.value for rs in batch.values() for r in rs]
                self.assignment = frozenset(tp.partition for tp in c.assignment())
        finally:
            c.close()


class ConfluentMember(Member):
    def consume(self) -> None:
        from confluent_kafka import Consumer

        c = Consumer(
            {
                "bootstrap.servers": self.cluster.bootstrap_servers,
                "group.id": self.group,
                "client.id": self.name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "heartbeat.interval.ms": HEARTBEAT_MS,
                "session.timeout.ms": SESSION_MS,
                "partition.assignment.strategy": "roundrobin",
            }
        )
        c.subscribe([self.topic])
        try:
            while not self.stopping.is_set():
                batch = [m for m in c.consume(1000, 0.1) if m.error() is None]
                if batch:
                    c.commit(asynchronous=False)
                    self.got += [m.value() for m in batch]
                self.assignment = frozenset(tp.partition for tp in c.assignment())
        finally:
            c.close()


class AioKafkaMember(Member):
    def consume(self) -> None:
        asyncio.run(self._consume())

    async def _consume(self) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        c = AIOKafkaConsumer(
            self.topic,
            bootstrap_servers=self.cluster.bootstrap_servers,
            group_id=self.group,
            client_id=self.name,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            heartbeat_interval_ms=HEARTBEAT_MS,
            session_timeout_ms=SESSION_MS,
            partition_assignment_strategy=(RoundRobinPartitionAssignor,),
        )
        await c.start()
        try:
            while not self.stopping.is_set():
                batch = await c.getmany(timeout_ms=100)
                if batch:
                    await c.commit()
                    self.got += [r.value for rs in batch.values() for r in rs]
                self.assignment = frozenset(tp.partition for tp in c.assignment())
        finally:
            await c.stop()


def balanced(members: list[Member]) -> bool:
    sizes = [len(m.assignment) for m in members]
    union = frozenset().union(*(m.assignment for m in members))
    return (
        union == frozenset(range(PARTITIONS))
        and sum(sizes) == PARTITIONS
        and max(sizes) - min(sizes) <= 1
    )


def consumed(members: list[Member], tag: str) -> list[bytes]:
    prefix = f"{tag}-".encode()
    return [v for m in members for v in list(m.got) if v.startswith(prefix)]


def test_three_client_libraries_share_a_group_and_rebalance(cluster: Cluster) -> None:
    topic, group = "shared", "mixed"
    create_topic(cluster, topic)
    kp = KafkaPythonMember("kafka-python", cluster, group, topic)
    members: list[Member] = [
        kp,
        ConfluentMember("confluent", cluster, group, topic),
        AioKafkaMember("aiokafka", cluster, group, topic),
    ]
    everyone = list(members)
    for m in members:
        m.start()
    try:
        wait_until("three members share the partitions", lambda: balanced(members), 60)
        assert {len(m.assignment) for m in members} == {2}
        phases = {"a": produce(cluster, topic, "a")}
        wait_until("phase a is consumed", lambda: len(consumed(everyone, "a")) >= PER_PHASE)
        assert all(consumed([m], "a") for m in members), "every member got records"

        kp.stop()  # LeaveGroup: the other two take over its partitions
        members.remove(kp)
        wait_until("two members share the partitions", lambda: balanced(members))
        assert {len(m.assignment) for m in members} == {3}
        phases["b"] = produce(cluster, topic, "b")
        wait_until("phase b is consumed", lambda: len(consumed(everyone, "b")) >= PER_PHASE)

        again = KafkaPythonMember("kafka-python-2", cluster, group, topic)
        members.append(again)
        everyone.append(again)
        again.start()  # a join: back to two partitions each, from the committed offsets
        wait_until("the restarted member gets its share", lambda: balanced(members), 60)
        phases["c"] = produce(cluster, topic, "c")
        wait_until("phase c is consumed", lambda: len(consumed(everyone, "c")) >= PER_PHASE)
        assert consumed([again], "c"), "the member that came back consumes"
        time.sleep(0.5)  # anything read twice would show up by now
        for m in members:
            m.check()
        for tag, sent in phases.items():
            got = consumed(everyone, tag)
            assert len(got) == len(sent) and set(got) == sent, f"phase {tag}"
        assert not consumed([again], "a") and not consumed([again], "b")
        admin_sees(cluster, group, topic, {m.name for m in members}, 3 * PER_PHASE)
        for m in members:
            m.stop()
        admin_deletes(cluster, group)
    finally:
        for m in members:
            m.stopping.set()
        for m in members:
            m.join(30)


def admin_sees(cluster: Cluster, group: str, topic: str, clients: set[str], total: int) -> None:
    """confluent-kafka's AdminClient lists and describes the group and reads its offsets."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    listed = admin.list_consumer_groups().result(10)
    assert [(g.group_id, g.state.name) for g in listed.valid] == [(group, "STABLE")]
    described = admin.describe_consumer_groups([group])[group].result(10)
    assert described.partition_assignor == "roundrobin"
    assert {m.client_id for m in described.members} == clients
    owned = sorted(tp.partition for m in described.members for tp in m.assignment.topic_partitions)
    assert owned == list(range(PARTITIONS))
    request = [ConsumerGroupTopicPartitions(group)]
    offsets = admin.list_consumer_group_offsets(request)[group].result(10).topic_partitions
    assert {tp.topic for tp in offsets} == {topic}
    assert sum(tp.offset for tp in offsets) == total


def admin_deletes(cluster: Cluster, group: str) -> None:
    """kafka-python's admin deletes the emptied group; its offsets go with it."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        assert admin.describe_groups([group])[group]["group_state"] == "Empty"
        assert admin.delete_groups([group]) == {group: "OK"}
        assert admin.list_groups() == []
        assert admin.list_group_offsets(group)[group] == {}
    finally:
        admin.close()


# -- coordinator failover -----------------------------------------------------------------------


async def _request(cluster: Cluster, broker: str, key: int, version: int, body: dict) -> dict:
    host, port = cluster.broker_address(cluster.nodes[broker])
    async with await Connection.open(host, port, codec=CODEC, timeout=5) as conn:
        return (await conn.request(key, version, body, timeout=10)).body


def ask(cluster: Cluster, broker: str, key: int, version: int, body: dict) -> dict | None:
    try:
        return asyncio.run(_request(cluster, broker, key, version, body))
    except (OSError, ConnectionError, TimeoutError):
        return None


def coordinator_of(cluster: Cluster, via: str, group: str) -> int:
    r = ask(cluster, via, ApiKey.FIND_COORDINATOR, 3, {"Key": group, "KeyType": 0})
    return r["NodeId"] if r is not None and r["ErrorCode"] == 0 else -1


def committed(cluster: Cluster, broker: str, group: str, topic: str) -> dict[int, int] | None:
    body = {"GroupId": group, "Topics": [{"Name": topic, "PartitionIndexes": list(range(6))}]}
    r = ask(cluster, broker, ApiKey.OFFSET_FETCH, 7, body)
    if r is None or r["ErrorCode"]:
        return None
    return {p["PartitionIndex"]: p["CommittedOffset"] for p in r["Topics"][0]["Partitions"]}


def offsets_leader(cluster: Cluster, via: str, partition: int) -> int:
    r = ask(cluster, via, ApiKey.METADATA, 9, {"Topics": [{"Name": OFFSETS_TOPIC}]})
    if r is None or not r["Topics"] or r["Topics"][0]["ErrorCode"]:
        return -1
    parts = {p["PartitionIndex"]: p for p in r["Topics"][0]["Partitions"]}
    return parts[partition]["LeaderId"] if partition in parts else -1


def test_a_killed_coordinator_hands_the_group_and_its_offsets_to_the_new_leader(
    cluster: Cluster,
) -> None:
    topic, group = "failover", "survivor"
    create_topic(cluster, topic)
    first = ConfluentMember("before", cluster, group, topic)
    first.start()
    try:
        sent = produce(cluster, topic, "a")
        wait_until("the first records are consumed", lambda: len(first.got) >= PER_PHASE)
    finally:
        first.stop()
    assert set(first.got) == sent and len(first.got) == len(sent)
    via = "broker-1"
    old = coordinator_of(cluster, via, group)
    assert old > 0
    before = committed(cluster, f"broker-{old}", group, topic)
    assert before is not None and sum(before.values()) == PER_PHASE

    cluster.kill(f"broker-{old}")
    survivors = [b.name for b in cluster.broker_nodes() if b.config.node_id != old]
    via = survivors[0]
    state: dict = {}

    def moved() -> bool:
        state["node"] = node = coordinator_of(cluster, via, group)
        if node in (-1, old):
            return False
        state["offsets"] = committed(cluster, f"broker-{node}", group, topic)
        return state["offsets"] is not None

    wait_until("the group has a new coordinator", moved, 30)
    assert state["offsets"] == before
    p = partition_for(group, OFFSETS_PARTITIONS)
    assert state["node"] == offsets_leader(cluster, via, p)

    second = AioKafkaMember("after", cluster, group, topic)
    second.start()
    try:
        more = produce(cluster, topic, "b")
        wait_until("the new records are consumed", lambda: len(second.got) >= PER_PHASE)
        time.sleep(0.3)
    finally:
        second.stop()
    assert set(second.got) == more and len(second.got) == len(more)
