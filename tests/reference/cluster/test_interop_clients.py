"""Real clients against a 3-broker reference cluster: kafka-python, confluent-kafka and aiokafka
each produce 20,000 records (plain and non-idempotent; compressed and idempotent with
acks=all) to a 3-partition, replication-factor-3 topic and read them back with ``assign``:
every record returns byte for byte (key, value, headers), in order per partition.

Consumer groups are the group coordinator's business and tested with it; topic
auto-creation (``auto.create.topics.enable``, one partition by default) is checked here.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reference_impl.launcher import Cluster

RECORDS = 20_000
PARTITIONS = 3
FAST = {"heartbeat_interval_ms": 100, "session_timeout_ms": 2000}

Record = tuple[int, bytes | None, bytes, list[tuple[str, bytes]]]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("interop"), brokers=3, overrides=FAST)
    c.start(timeout=60)
    try:
        yield c
    finally:
        c.stop()


def records(tag: str, n: int = RECORDS) -> list[Record]:
    """Partition, key (sometimes null), value (random bytes, some empty), headers."""
    seed = os.urandom(64)
    out = []
    for i in range(n):
        key = None if i % 7 == 0 else f"{tag}-{i}".encode()
        value = seed[: i % 64] + i.to_bytes(4, "big") + (b"\xff" * (i % 300))
        headers = [("h", bytes([i % 256]))] if i % 5 == 0 else []
        out.append((i % PARTITIONS, key, value, headers))
    return out


def create_topic(cluster: Cluster, name: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics([NewTopic(name, PARTITIONS, 3)], operation_timeout=10)
    futures[name].result(15)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:  # every broker knows every leader
        md = admin.list_topics(name, timeout=5).topics[name]
        if len(md.partitions) == PARTITIONS and all(p.leader >= 0 for p in md.partitions.values()):
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {name} has no leaders")


def by_partition(rs: list[Record]) -> dict[int, list[tuple]]:
    out: dict[int, list[tuple]] = {p: [] for p in range(PARTITIONS)}
    for p, k, v, h in rs:
        out[p].append((k, v, [(hk, hv) for hk, hv in h]))
    return out


# -- confluent-kafka (librdkafka) -------------------------------------------------------------


def confluent_produce(cluster: Cluster, topic: str, rs: list[Record], **conf) -> None:
    from confluent_kafka import Producer

    errors: list = []
    p = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5, **conf},
    )
    try:
        for part, k, v, h in rs:
            while True:
                try:
                    p.produce(
                        topic,
                        value=v,
                        key=k,
                        partition=part,
                        headers=h or None,
                        on_delivery=lambda e, m: errors.append(e) if e else None,
                    )
                    break
                except BufferError:
                    p.poll(0.05)
            p.poll(0)
        assert p.flush(60) == 0
    finally:
        p.close()  # its threads go now, not after the cluster is gone
    assert errors == []


def confluent_consume(cluster: Cluster, topic: str, n: int) -> list[Record]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"assign-{topic}",
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    out: list[Record] = []
    deadline = time.monotonic() + 60
    try:
        while len(out) < n and time.monotonic() < deadline:
            for m in c.consume(5000, 0.5):
                assert m.error() is None, m.error()
                out.append((m.partition(), m.key(), m.value(), list(m.headers() or [])))
    finally:
        c.close()
    return out


@pytest.mark.parametrize(
    "conf",
    [
        {"acks": "1", "enable.idempotence": False},
        {"acks": "all", "enable.idempotence": True, "compression.type": "zstd"},
        {"acks": "all", "enable.idempotence": True, "compression.type": "snappy"},
    ],
    ids=["plain", "zstd-idempotent", "snappy-idempotent"],
)
def test_confluent_kafka_round_trip(cluster: Cluster, conf: dict) -> None:
    topic = f"confluent-{conf.get('compression.type', 'none')}"
    create_topic(cluster, topic)
    sent = records(topic)
    confluent_produce(cluster, topic, sent, **conf)
    got = confluent_consume(cluster, topic, len(sent))
    assert by_partition(got) == by_partition(sent)


# -- kafka-python -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "conf",
    [
        {"acks": 1},
        {"acks": "all", "enable_idempotence": True, "compression_type": "gzip"},
    ],
    ids=["plain", "gzip-idempotent"],
)
def test_kafka_python_round_trip(cluster: Cluster, conf: dict) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = f"kafka-python-{conf.get('compression_type', 'none')}"
    create_topic(cluster, topic)
    sent = records(topic)
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers,
        linger_ms=5,
        batch_size=256 * 1024,
        **conf,
    )
    futures = [producer.send(topic, value=v, key=k, partition=p, headers=h) for p, k, v, h in sent]
    producer.flush(60)
    for f in futures:
        f.get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got: list[Record] = []
    deadline = time.monotonic() + 60
    while len(got) < len(sent) and time.monotonic() < deadline:
        for tp, ms in consumer.poll(timeout_ms=500, max_records=5000).items():
            got += [(tp.partition, m.key, m.value, list(m.headers)) for m in ms]
    consumer.close()
    assert by_partition(got) == by_partition(sent)


# -- aiokafka ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "conf",
    [
        {"acks": 1},
        {"acks": "all", "enable_idempotence": True, "compression_type": "lz4"},
    ],
    ids=["plain", "lz4-idempotent"],
)
def test_aiokafka_round_trip(cluster: Cluster, conf: dict) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    topic = f"aiokafka-{conf.get('compression_type', 'none')}"
    create_topic(cluster, topic)
    sent = records(topic)

    async def main() -> list[Record]:
        producer = AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers, linger_ms=5, **conf
        )
        await producer.start()
        try:
            pending = [
                await producer.send(topic, value=v, key=k, partition=p, headers=h)
                for p, k, v, h in sent
            ]
            await asyncio.gather(*pending)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False
        )
        await consumer.start()
        got: list[Record] = []
        try:
            tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            deadline = time.monotonic() + 60
            while len(got) < len(sent) and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500, max_records=5000)
                for tp, ms in batches.items():
                    got += [(tp.partition, m.key, m.value, list(m.headers)) for m in ms]
        finally:
            await consumer.stop()
        return got

    got = asyncio.run(asyncio.wait_for(main(), 120))
    assert by_partition(got) == by_partition(sent)


# -- auto-creation ----------------------------------------------------------------------------


def test_producing_to_an_unknown_topic_creates_it_with_one_partition(cluster: Cluster) -> None:
    from confluent_kafka.admin import AdminClient

    topic = "auto-created"
    sent = [(0, b"k", b"v%d" % i, []) for i in range(10)]
    confluent_produce(cluster, topic, sent, acks="all")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    md = admin.list_topics(topic, timeout=5).topics[topic]
    assert md.error is None and len(md.partitions) == 1
    got = confluent_consume(cluster, topic, len(sent))
    assert [r[2] for r in got] == [r[2] for r in sent]


def test_data_lands_under_each_brokers_log_dir(cluster: Cluster) -> None:
    """Replication factor 3: every broker holds every partition of an interop topic."""
    for node in cluster.broker_nodes():
        logs = Path(node.config.data_dir) / "logs"
        for p in range(PARTITIONS):
            assert (logs / f"confluent-none-{p}").is_dir()
