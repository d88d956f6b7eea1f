"""What the client's users and interceptors see of a record, on each side of the broker.

These mirror the Java client's ``ProducerRecord``, ``RecordMetadata``, ``ConsumerRecord``,
``ConsumerRecords`` and ``OffsetAndMetadata`` with KIP-42's additions: the record metadata on
both sides carries a checksum and the serialised key and value sizes (-1 for a null key or
value). All are frozen: an interceptor that changes a record returns a new one
(``dataclasses.replace``), as the seed asks of ``onSend`` / ``onConsume``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from conformance.protocol.records import Header, TimestampType

#: a record's timestamp when none was given or known
NO_TIMESTAMP = -1
#: a size field of a null key or value
NULL_SIZE = -1


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class ProducerRecord:
    """What ``Producer.send`` is given (key and value not serialised yet)."""

    topic: str
    value: Any = None
    key: Any = None
    headers: tuple[Header, ...] = ()
    partition: int | None = None
    timestamp: int | None = None

    def __post_init__(self) -> None:
        if not all(isinstance(h, Header) for h in self.headers) or not isinstance(
            self.headers, tuple
        ):
            object.__setattr__(self, "headers", tuple(_header(h) for h in self.headers))


def _header(h: Header | tuple[str, bytes | None]) -> Header:
    return h if isinstance(h, Header) else Header(h[0], h[1])


@dataclass(frozen=True)
class RecordMetadata:
    """Where an acknowledged record was written, and what it was (KIP-42).

    ``offset`` is -1 when the producer does not wait for an answer (acks=0). ``timestamp`` is
    the broker's log-append time when the topic uses it, the record's create time otherwise.
    ``checksum`` is :func:`conformance.client.checksum.record_checksum` of the record as sent.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    checksum: int
    serialized_key_size: int
    serialized_value_size: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class ConsumerRecord:
    """A fetched record after deserialisation, with the KIP-42 checksum and sizes."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: TimestampType | None
    key: Any
    value: Any
    headers: tuple[Header, ...]
    checksum: int
    serialized_key_size: int
    serialized_value_size: int
    leader_epoch: int | None = None

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class ConsumerRecords(Mapping[TopicPartition, Sequence[ConsumerRecord]]):
    """What ``Consumer.poll`` returns: records per partition, in offset order."""

    by_partition: Mapping[TopicPartition, Sequence[ConsumerRecord]] = field(default_factory=dict)

    def __getitem__(self, tp: TopicPartition) -> Sequence[ConsumerRecord]:
        return self.by_partition[tp]

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self.by_partition)

    def __len__(self) -> int:
        return len(self.by_partition)

    def records(self) -> list[ConsumerRecord]:
        """Every record, partition by partition."""
        return [r for rs in self.by_partition.values() for r in rs]

    @property
    def count(self) -> int:
        return sum(len(rs) for rs in self.by_partition.values())

    @classmethod
    def of(cls, records: Sequence[ConsumerRecord]) -> ConsumerRecords:
        """Group records by partition (keeping their order)."""
        out: dict[TopicPartition, list[ConsumerRecord]] = {}
        for r in records:
            out.setdefault(r.topic_partition, []).append(r)
        return cls({tp: tuple(rs) for tp, rs in out.items()})


@dataclass(frozen=True)
class OffsetAndMetadata:
    """A committed position: the offset of the next record to consume, with optional text."""

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None
