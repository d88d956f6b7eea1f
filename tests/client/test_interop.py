"""The client and librdkafka (confluent-kafka) read each other's records on tansu and on the
reference cluster: key, value, headers and offsets agree, the checksum our consumer reports for
librdkafka's records is that of their bytes, and keyed records land where librdkafka's
Java-compatible ``murmur2_random`` partitioner puts them."""

from __future__ import annotations

import asyncio

from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import Producer as RdProducer
from confluent_kafka import TopicPartition as RdTopicPartition

from conformance.client.checksum import record_checksum
from conformance.client.partitioner import partition_for_key
from conformance.client.record_types import TopicPartition
from conformance.protocol.records import Header
from conformance.suite.kip42.env import PARTITIONS, ClientEnv

COUNT = 600


def servers(env: ClientEnv) -> str:
    return ",".join(str(e) for e in env.bootstrap)


def sample(i: int) -> tuple[bytes | None, bytes | None, tuple[Header, ...]]:
    key = None if i % 5 == 0 else f"key-{i % 37}".encode()
    value = None if i % 11 == 0 else bytes(range(i % 256)) + i.to_bytes(4, "big")
    headers = (Header("h", bytes([i % 256])), Header("n", None)) if i % 3 == 0 else ()
    return key, value, headers


def test_librdkafka_reads_what_the_client_produced(env, topic) -> None:
    async def produce():
        async with env.producer(value_serializer=None) as p:
            futures = [await p.send(topic, *sample(i)) for i in range(COUNT)]
            return await asyncio.gather(*futures)

    mds = asyncio.run(produce())
    want = {(md.partition, md.offset): sample(i) for i, md in enumerate(mds)}
    c = RdConsumer(
        {"bootstrap.servers": servers(env), "group.id": "kc-interop", "enable.auto.commit": False}
    )
    try:
        c.assign([RdTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        got = {}
        for _ in range(200):
            for m in c.consume(500, timeout=0.2):
                assert m.error() is None, m.error()
                headers = tuple(Header(k, v) for k, v in (m.headers() or []))
                got[(m.partition(), m.offset())] = (m.key(), m.value(), headers)
            if len(got) >= COUNT:
                break
    finally:
        c.close()
    assert got == want


def test_client_reads_what_librdkafka_produced(env, topic) -> None:
    p = RdProducer(
        {"bootstrap.servers": servers(env), "partitioner": "murmur2_random", "linger.ms": 5}
    )
    delivered: dict[tuple[int, int], int] = {}

    def on_delivery(err, msg, i: int) -> None:
        assert err is None, err
        delivered[(msg.partition(), msg.offset())] = i

    try:
        for i in range(COUNT):
            key, value, headers = sample(i)
            p.produce(
                topic,
                value=value,
                key=key,
                headers=[(h.key, h.value) for h in headers],
                on_delivery=lambda err, msg, i=i: on_delivery(err, msg, i),
            )
        assert p.flush(30) == 0
    finally:
        p.close()  # its threads go now, not after the broker is gone
    assert len(delivered) == COUNT

    async def consume():
        got = {}
        async with env.consumer(value_deserializer=None) as c:
            c.assign([TopicPartition(topic, part) for part in range(PARTITIONS)])
            c.seek_to_beginning()
            for _ in range(200):
                for r in (await c.poll(500)).records():
                    got[(r.partition, r.offset)] = r
                if len(got) >= COUNT:
                    break
        return got

    got = asyncio.run(consume())
    assert set(got) == set(delivered)
    for pos, i in delivered.items():
        key, value, headers = sample(i)
        r = got[pos]
        assert (r.key, r.value, r.headers) == (key, value, headers)
        assert r.checksum == record_checksum(key, value, headers)
        if key is not None:
            assert pos[0] == partition_for_key(key, PARTITIONS)
