"""Probe interceptors: they log every call into a shared :class:`Trace` and behave as told.

``pass`` returns its input, ``tag`` appends its mark to the record value(s) (values are JSON
lists, so a mark shows the value was not serialised yet) and a header, ``rekey`` changes the
key (so the partition follows the new key), ``raise`` raises in every callback and
``wrong-type`` returns something that is not a record. ``expected_chain`` and
``expected_consume`` are the model: a failing interceptor must leave the record as it was for
the next one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from conformance.client.interceptors import (
    ConsumerInterceptor,
    ProducerInterceptor,
)
from conformance.client.record_types import (
    ConsumerRecords,
    ProducerRecord,
    RecordMetadata,
)
from conformance.protocol.records import Header

if TYPE_CHECKING:
    pass


PRODUCER_BEHAVIOURS = ("pass", "tag", "rekey", "raise", "wrong-type")
CONSUMER_BEHAVIOURS = ("pass", "tag", "raise", "wrong-type")
FAILING = ("raise", "wrong-type")


class ProbeError(RuntimeError):
    """What a ``raise`` probe raises (the client must log and swallow it)."""


# --- probes ------------------------------------------------------------------------------------


@dataclass
class Trace:
    """Every call the probes saw, in order: (callback, probe index, arguments...)."""

    events: list[tuple] = field(default_factory=list)
    configs: dict[int, dict] = field(default_factory=dict)

    def of(self, name: str, index: int | None = None) -> list[tuple]:
        return [e for e in self.events if e[0] == name and (index is None or e[1] == index)]


class ProducerProbe(ProducerInterceptor):
    def __init__(self, index: int, behaviour: str, trace: Trace) -> None:
        self.index, self.behaviour, self.trace = index, behaviour, trace

    def configure(self, config: dict) -> None:
        self.trace.configs[self.index] = dict(config)

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        self.trace.events.append(("on_send", self.index, record))
        return producer_step(self.index, self.behaviour, record)

    def on_acknowledgement(
        self, metadata: RecordMetadata | None, exception: BaseException | None
    ) -> None:
        self.trace.events.append(("on_acknowledgement", self.index, metadata, exception))
        if self.behaviour == "raise":
            raise ProbeError(f"probe {self.index} on_acknowledgement")

    def close(self) -> None:
        self.trace.events.append(("close", self.index))
        if self.behaviour == "raise":
            raise ProbeError(f"probe {self.index} close")


def producer_step(index: int, behaviour: str, record: ProducerRecord) -> Any:
    """What a probe's on_send does to a record (raises / returns junk for failing ones)."""
    if behaviour == "raise":
        raise ProbeError(f"probe {index} on_send")
    if behaviour == "wrong-type":
        return f"not a record (probe {index})"
    if behaviour == "tag":
        return replace(
            record,
            value=[*record.value, index],
            headers=(*record.headers, Header(f"p{index}", str(index).encode())),
        )
    if behaviour == "rekey":
        return replace(record, key=f"k{index}.{record.key}")
    return record


def expected_chain(record: ProducerRecord, behaviours: Sequence[str]) -> list[ProducerRecord]:
    """The record each probe must receive, then the one sent (the last element)."""
    seen = [record]
    for i, b in enumerate(behaviours):
        out = record if b in FAILING else producer_step(i, b, record)
        record = out
        seen.append(record)
    return seen


class ConsumerProbe(ConsumerInterceptor):
    def __init__(self, index: int, behaviour: str, trace: Trace) -> None:
        self.index, self.behaviour, self.trace = index, behaviour, trace

    def configure(self, config: dict) -> None:
        self.trace.configs[self.index] = dict(config)

    def on_consume(self, records: ConsumerRecords) -> ConsumerRecords:
        self.trace.events.append(("on_consume", self.index, records))
        return consumer_step(self.index, self.behaviour, records)

    def on_commit(self, offsets: dict) -> None:
        self.trace.events.append(("on_commit", self.index, dict(offsets)))
        if self.behaviour == "raise":
            raise ProbeError(f"probe {self.index} on_commit")

    def close(self) -> None:
        self.trace.events.append(("close", self.index))
        if self.behaviour == "raise":
            raise ProbeError(f"probe {self.index} close")


def consumer_step(index: int, behaviour: str, records: ConsumerRecords) -> Any:
    if behaviour == "raise":
        raise ProbeError(f"probe {index} on_consume")
    if behaviour == "wrong-type":
        return [f"not records (probe {index})"]
    if behaviour == "tag":
        return ConsumerRecords.of(
            [replace(r, value=[*r.value, f"c{index}"]) for r in records.records()]
        )
    return records


def expected_consume(records: ConsumerRecords, behaviours: Sequence[str]) -> list[ConsumerRecords]:
    seen = [records]
    for i, b in enumerate(behaviours):
        if b not in FAILING:
            records = consumer_step(i, b, records)
        seen.append(records)
    return seen
