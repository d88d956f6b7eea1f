"""A real KIP-848 consumer against the reference: confluent-kafka (librdkafka) with
``group.protocol=consumer`` (ConsumerGroupHeartbeat, OffsetCommit/OffsetFetch v9).

Two members share a 3-partition topic, the second joins while the first consumes and the first
leaves while the second does: every record is consumed exactly once (each committed
synchronously), and a third member reads the committed offsets back: nothing left to consume.
Also with the first member on the classic protocol (its group upgraded when the second joins)
and on the ZooKeeper store (publication). One broker, heartbeats every 300 ms: about 15 s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.targets.zookeeper import ZooKeeperServer
from reference_impl.launcher import Cluster
from tests.reference.control_plane import new_cluster
from tests.reference.groups.test_clients import create_offsets_topic, wait_until

GROUP, RECORDS = "kip848-group", 300
SETTINGS = {
    "settings": {
        "groups": {
            "offsets_topic_partitions": 4,
            "consumer_heartbeat_interval_ms": 300,
            "consumer_session_timeout_ms": 3000,
        }
    }
}


def started(
    data_dir: Path, store: str = "embedded", zookeeper: ZooKeeperServer | None = None
) -> Iterator[Cluster]:
    """One broker of the store, ``__consumer_offsets`` created, stopped after."""
    c = new_cluster(
        data_dir,
        store,
        zookeeper,
        brokers=1,
        overrides={"heartbeat_interval_ms": 100, "session_timeout_ms": 2000},
        broker_overrides=SETTINGS,
    )
    c.start(timeout=60)
    try:
        create_offsets_topic(c)
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One broker for the module's tests (each uses its own topic and group)."""
    yield from started(tmp_path_factory.mktemp("kip848") / "cluster")


def members(cluster: Cluster, group: str) -> int:
    """How many members ConsumerGroupDescribe shows (the one broker coordinates every group)."""
    from conformance.protocol import ApiKey
    from tests.reference.groups.test_clients import ask

    body = {"GroupIds": [group], "IncludeAuthorizedOperations": False}
    answer = ask(cluster, "broker-1", ApiKey.CONSUMER_GROUP_DESCRIBE, 1, body)
    if answer is None or answer["Groups"][0]["ErrorCode"]:
        return 0
    return len(answer["Groups"][0]["Members"])


def consumer(bootstrap: str, group: str = GROUP, protocol: str = "consumer"):
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )


def filled_topic(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    """A new topic of one replica, once it has leaders, given ``records`` (values "0", "1", ...
    spread round-robin over the partitions)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, 1)
    admin.create_topics([new], operation_timeout=10)[topic].result(15)
    wait_until(
        "the topic has leaders",
        lambda: all(
            p.leader >= 0
            for p in admin.list_topics(topic, timeout=5).topics[topic].partitions.values()
        ),
    )
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(records):
        producer.produce(topic, value=str(i).encode(), partition=i % partitions)
    assert producer.flush(30) == 0


@pytest.fixture(scope="module")
def zookeeper_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[Cluster]:
    """The ``cluster`` fixture's one broker, its metadata in ZooKeeper."""
    yield from started(tmp_path_factory.mktemp("kip848-zk") / "cluster", "zookeeper", zookeeper)


PUBLICATION = pytest.mark.publication
#: (first member's group.protocol, metadata store): CI runs the first, publication the others
#: (classic first: the classic member's group is upgraded when the second joins with the
#: consumer protocol; the classic member then leaves the consumer group)
CASES = [
    ("consumer", "embedded"),
    pytest.param("classic", "embedded", marks=PUBLICATION),
    pytest.param("consumer", "zookeeper", marks=PUBLICATION),
    pytest.param("classic", "zookeeper", marks=PUBLICATION),
]


@pytest.mark.parametrize(("first_protocol", "store"), CASES)
def test_members_joining_and_leaving_consume_every_record_once(
    request: pytest.FixtureRequest, first_protocol: str, store: str
) -> None:
    from confluent_kafka import TopicPartition

    cluster: Cluster = request.getfixturevalue(
        "zookeeper_cluster" if store == "zookeeper" else "cluster"
    )
    topic, group = f"kip848-{first_protocol}", f"kip848-group-{first_protocol}"
    bootstrap = cluster.bootstrap_servers
    filled_topic(bootstrap, topic, 3, RECORDS)
    seen: list[tuple[str, int, str]] = []
    errors: list[str] = []
    stop: dict[str, bool] = {}

    def member(name: str, protocol: str = "consumer") -> None:
        c = consumer(bootstrap, group, protocol)
        c.subscribe([topic])
        deadline = time.monotonic() + 60
        try:
            while not stop.get(name) and time.monotonic() < deadline:
                m = c.poll(0.2)
                if m is None:
                    continue
                if m.error():
                    errors.append(f"{name}: {m.error()}")
                    continue
                seen.append((name, m.partition(), m.value().decode()))
                c.commit(message=m, asynchronous=False)
                time.sleep(0.01)
        finally:
            c.close()

    first = threading.Thread(target=member, args=("first", first_protocol))
    first.start()
    wait_until("the first member consumes", lambda: len(seen) > 20)
    second = threading.Thread(target=member, args=("second",))
    second.start()
    # the second is in the group (it may get no partition if the first has consumed everything)
    wait_until("the second member joins", lambda: members(cluster, group) == 2, 30)
    stop["first"] = True
    first.join()
    wait_until("every record is consumed", lambda: len({v for *_, v in seen}) >= RECORDS, 40)
    stop["second"] = True
    second.join()
    values = [v for *_, v in seen]
    counts = {who: sum(1 for w, *_ in seen if w == who) for who in ("first", "second")}
    print(f"{store} store, first {first_protocol}: {len(values)} of {RECORDS} by {counts}")
    assert not errors
    assert sorted(values, key=int) == [str(i) for i in range(RECORDS)], "lost or duplicated"
    third = consumer(bootstrap, group)
    try:
        got = third.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)
        assert sorted(tp.offset for tp in got) == [RECORDS // 3] * 3
    finally:
        third.close()


def test_group_configs_bound_and_apply(cluster: Cluster) -> None:
    """IncrementalAlterConfigs on a GROUP resource (KIP-848's group configs): values outside the
    brokers' bounds are INVALID_CONFIG; set ones are what DescribeConfigs shows and what the
    group's next heartbeat uses (HeartbeatIntervalMs)."""
    from conformance.protocol import ApiKey, ConfigResourceType, ErrorCode
    from tests.reference.groups.test_clients import ask

    def alter(name: str, value: str) -> int:
        body = {
            "Resources": [
                {
                    "ResourceType": int(ConfigResourceType.GROUP),
                    "ResourceName": "configured",
                    "Configs": [{"Name": name, "ConfigOperation": 0, "Value": value}],
                }
            ],
            "ValidateOnly": False,
        }
        r = ask(cluster, "broker-1", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
        assert r is not None
        return r["Responses"][0]["ErrorCode"]

    assert alter("consumer.session.timeout.ms", "1000") == ErrorCode.INVALID_CONFIG
    assert alter("consumer.heartbeat.interval.ms", "60000") == ErrorCode.INVALID_CONFIG
    assert alter("consumer.heartbeat.interval.ms", "6000") == 0
    described = ask(
        cluster,
        "broker-1",
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "Resources": [
                {
                    "ResourceType": int(ConfigResourceType.GROUP),
                    "ResourceName": "configured",
                    "ConfigurationKeys": None,
                }
            ],
            "IncludeSynonyms": False,
            "IncludeDocumentation": False,
        },
    )
    assert described is not None
    values = {c["Name"]: c["Value"] for c in described["Results"][0]["Configs"]}
    # the consumer group configs (the share group ones, issue 39, are described beside them)
    assert {n: v for n, v in values.items() if n.startswith("consumer.")} == {
        "consumer.heartbeat.interval.ms": "6000",
        "consumer.session.timeout.ms": "45000",
        "consumer.assignment.interval.ms": "1000",  # Kafka 4.4.0's GroupConfig has both
        "consumer.assignor.offload.enable": "true",
    }
    assert values["share.auto.offset.reset"] == "latest"
    joined = ask(
        cluster,
        "broker-1",
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        1,
        {
            "GroupId": "configured",
            "MemberId": "m-1",
            "MemberEpoch": 0,
            "RebalanceTimeoutMs": 5000,
            "SubscribedTopicNames": [],
            "TopicPartitions": [],
        },
    )
    assert joined is not None and joined["ErrorCode"] == 0, joined
    assert joined["MemberEpoch"] == 1 and joined["HeartbeatIntervalMs"] == 6000
