"""Which ``__consumer_offsets`` partition (and so which broker) coordinates a group.

Kafka: ``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``, where ``hashCode`` is
Java's ``String.hashCode`` over UTF-16 code units and ``Utils.abs(Integer.MIN_VALUE)`` is 0.
Matching it exactly means a group lands on the same partition number as on a real cluster.
"""

from __future__ import annotations

from conformance.protocol.spec import INT_RANGES

#: Kafka's default offsets.topic.num.partitions
DEFAULT_OFFSETS_PARTITIONS = 50

#: Java's Integer.MIN_VALUE
_INT_MIN = INT_RANGES["int32"][0]


def java_string_hashcode(s: str) -> int:
    """``s.hashCode()`` of the Java string holding the same characters (int32 overflow)."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs`` except that ``Integer.MIN_VALUE`` maps to 0."""
    return 0 if n == _INT_MIN else abs(n)


def partition_for(group_id: str, partitions: int) -> int:
    return kafka_abs(java_string_hashcode(group_id)) % partitions
