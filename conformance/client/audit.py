"""End-to-end audit with a pair of KIP-42 interceptors: every acknowledged record is consumed
exactly once, with the checksum and sizes it was acknowledged with.

    audit = Audit()
    Producer(..., interceptors=[audit.producer_interceptor()])
    Consumer(..., interceptors=[audit.consumer_interceptor()])
    ...
    differences = audit.verify()
    assert differences.ok, differences

The producer side records each acknowledged ``(topic, partition, offset)`` with its checksum and
serialised sizes (records sent with acks=0 have no offset and are only counted); the consumer
side records each record ``on_consume`` saw. The interceptors change nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from conformance.client.interceptors import ConsumerInterceptor, ProducerInterceptor
from conformance.client.record_types import (
    ConsumerRecords,
    OffsetAndMetadata,
    RecordMetadata,
    TopicPartition,
)

#: (topic, partition, offset)
Position = tuple[str, int, int]
#: (checksum, serialized key size, serialized value size)
Fingerprint = tuple[int, int, int]


@dataclass(frozen=True)
class AuditDifferences:
    """What the ledgers disagree on (all empty: every acknowledged record arrived once, intact)."""

    #: acknowledged, never consumed
    missing: tuple[Position, ...] = ()
    #: consumed more than once: position -> times
    duplicated: Mapping[Position, int] = field(default_factory=dict)
    #: consumed with another checksum or size: position -> (acknowledged, consumed)
    mismatched: Mapping[Position, tuple[Fingerprint, Fingerprint]] = field(default_factory=dict)
    #: consumed, never acknowledged (in the audited topics)
    unexpected: tuple[Position, ...] = ()

    @property
    def ok(self) -> bool:
        return not (self.missing or self.duplicated or self.mismatched or self.unexpected)

    def __str__(self) -> str:
        if self.ok:
            return "no differences"
        parts = []
        for name in ("missing", "duplicated", "mismatched", "unexpected"):
            items = getattr(self, name)
            if items:
                shown = list(items.items() if isinstance(items, Mapping) else items)[:5]
                parts.append(f"{len(items)} {name} (e.g. {shown})")
        return "; ".join(parts)


class Audit:
    """The two ledgers and the interceptors that fill them."""

    def __init__(self) -> None:
        self.acknowledged: dict[Position, Fingerprint] = {}
        self.consumed: dict[Position, list[Fingerprint]] = {}
        self.failed: list[BaseException] = []
        #: acknowledged with no offset (acks=0): counted, not auditable by position
        self.unpositioned = 0
        self.commits: list[dict[TopicPartition, OffsetAndMetadata]] = []

    def producer_interceptor(self) -> AuditProducerInterceptor:
        return AuditProducerInterceptor(self)

    def consumer_interceptor(self) -> AuditConsumerInterceptor:
        return AuditConsumerInterceptor(self)

    def acknowledge(self, md: RecordMetadata) -> None:
        if md.offset < 0:
            self.unpositioned += 1
            return
        fp = (md.checksum, md.serialized_key_size, md.serialized_value_size)
        self.acknowledged[(md.topic, md.partition, md.offset)] = fp

    def consume(self, records: ConsumerRecords) -> None:
        for r in records.records():
            fp = (r.checksum, r.serialized_key_size, r.serialized_value_size)
            self.consumed.setdefault((r.topic, r.partition, r.offset), []).append(fp)

    def verify(self, topics: Iterable[str] | None = None) -> AuditDifferences:
        """Compare the ledgers (restricted to ``topics`` when given)."""
        wanted = None if topics is None else set(topics)

        def keep(pos: Position) -> bool:
            return wanted is None or pos[0] in wanted

        acked = {p: fp for p, fp in self.acknowledged.items() if keep(p)}
        consumed = {p: fps for p, fps in self.consumed.items() if keep(p)}
        duplicated = {p: len(fps) for p, fps in consumed.items() if len(fps) > 1}
        mismatched = {
            p: (acked[p], fp)
            for p, fps in consumed.items()
            if p in acked
            for fp in Counter(fps)
            if fp != acked[p]
        }
        return AuditDifferences(
            missing=tuple(sorted(p for p in acked if p not in consumed)),
            duplicated=duplicated,
            mismatched=mismatched,
            unexpected=tuple(sorted(p for p in consumed if p not in acked)),
        )


class AuditProducerInterceptor(ProducerInterceptor):
    def __init__(self, audit: Audit) -> None:
        self.audit = audit

    def on_acknowledgement(
        self, metadata: RecordMetadata | None, exception: BaseException | None
    ) -> None:
        if exception is not None:
            self.audit.failed.append(exception)
        elif metadata is not None:
            self.audit.acknowledge(metadata)


class AuditConsumerInterceptor(ConsumerInterceptor):
    def __init__(self, audit: Audit) -> None:
        self.audit = audit

    def on_consume(self, records: ConsumerRecords) -> ConsumerRecords:
        self.audit.consume(records)
        return records

    def on_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        self.audit.commits.append(dict(offsets))
