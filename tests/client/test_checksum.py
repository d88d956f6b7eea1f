"""The KIP-42 checksum (see conformance.client.checksum) and the key partitioner."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import DefaultPartitioner as KafkaPythonPartitioner
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from conformance.client.checksum import (
    kafka_partial_checksum,
    record_checksum,
    record_content,
    serialized_size,
)
from conformance.client.partitioner import DefaultPartitioner, murmur2, partition_for_key
from conformance.protocol.records import Header, Record
from conformance.protocol.records.record import encode_record
from conformance.protocol.records.wire import Reader

data = st.none() | st.binary(max_size=300)
headers = st.lists(st.builds(Header, st.text(max_size=8), data), max_size=4)


def crc32c_bitwise(payload: bytes) -> int:
    """CRC-32C (Castagnoli, reflected 0x82F63B78) one bit at a time: an independent oracle."""
    crc = 0xFFFFFFFF
    for byte in payload:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


@given(data, data, headers, st.integers(0, 2**31 - 1), st.integers(-(2**40), 2**40))
def test_content_is_the_v2_record_after_its_position_fields(key, value, hs, od, td) -> None:
    out = bytearray()
    encode_record(out, Record(od, td, key, value, tuple(hs)))
    r = Reader(bytes(out))
    r.varint()  # length
    r.int8()  # attributes
    r.varlong()  # timestamp delta
    r.varint()  # offset delta
    assert bytes(out[r.pos :]) == record_content(key, value, hs)


@given(data, data, headers)
def test_checksum_is_crc32c_of_the_content(key, value, hs) -> None:
    assert record_checksum(key, value, hs) == crc32c_bitwise(record_content(key, value, hs))


@given(data, data)
def test_checksum_tells_null_from_empty_and_covers_the_content(key, value) -> None:
    base = record_checksum(key, value)
    assert record_checksum(b"" if key is None else None, value) != base
    assert record_checksum(key, (value or b"") + b"!") != base


@given(st.integers(-(2**63), 2**63 - 1), st.integers(-1, 2**31 - 1), st.integers(-1, 2**31 - 1))
def test_kafka_partial_checksum_layout(ts, ks, vs) -> None:
    assert kafka_partial_checksum(ts, ks, vs) == crc32c_bitwise(struct.pack(">qii", ts, ks, vs))


def test_serialized_size_is_minus_one_for_null() -> None:
    assert (serialized_size(None), serialized_size(b""), serialized_size(b"abc")) == (-1, 0, 3)


class OneTopic:
    """The part of kafka-python's ClusterMetadata its partitioner reads."""

    def __init__(self, n: int) -> None:
        self.n = n

    def topics(self) -> set[str]:
        return {"t"}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(self.n))

    available_partitions_for_topic = partitions_for_topic


@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(key) -> None:
    assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key) & 0xFFFFFFFF
    assert -(2**31) <= murmur2(key) < 2**31


@given(st.binary(min_size=0, max_size=32), st.integers(1, 50))
def test_keyed_partition_matches_kafka_python(key, n) -> None:
    theirs = KafkaPythonPartitioner().partition("t", key, key, None, None, OneTopic(n))
    assert partition_for_key(key, n) == theirs
    assert DefaultPartitioner()("t", key, list(range(n))) == theirs


def test_unkeyed_records_go_round_robin() -> None:
    p = DefaultPartitioner()
    assert [p("t", None, [0, 1, 2]) for _ in range(6)] == [0, 1, 2, 0, 1, 2]
