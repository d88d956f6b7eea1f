"""Choosing a partition for a record the way Kafka's Java producer does.

A record with a key goes to ``murmur2(serialised key) & 0x7fffffff % partitions`` (Kafka's
``BuiltInPartitioner.partitionForKey``), so the suite's client places keyed records where the
Java client would; records without a key are spread round-robin over the topic's partitions.
"""

from __future__ import annotations

import itertools

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 of ``data`` (``Utils.murmur2``), as a signed int32."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    rest = length % 4
    tail = 4 * n4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class DefaultPartitioner:
    """Keyed records by murmur2; unkeyed ones round-robin, per topic."""

    def __init__(self) -> None:
        self._counters: dict[str, itertools.count] = {}

    def __call__(self, topic: str, key: bytes | None, partitions: list[int]) -> int:
        if not partitions:
            raise ValueError(f"topic {topic!r} has no partitions")
        if key is not None:
            return partitions[partition_for_key(key, len(partitions))]
        counter = self._counters.setdefault(topic, itertools.count())
        return partitions[next(counter) % len(partitions)]
