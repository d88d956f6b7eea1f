"""KIP-42 interceptors, and KIP-78's ClusterResourceListener, with the chains that call them.

A producer or consumer is given an ordered list of interceptors (instances, or classes it
instantiates with no arguments); each is configured with the client's settings, then called at
the points the seed names:

* ``ProducerInterceptor.on_send(record)`` in ``send()``, before the key and value are
  serialised and before a partition is chosen; it returns the record to send (the same one or
  a new one). The chain hands each interceptor what the previous one returned.
* ``ProducerInterceptor.on_acknowledgement(metadata, exception)`` once per record: with the
  record's metadata and no exception when the broker acknowledged it, with ``None`` and the
  exception when it failed (also when ``send()`` itself raises, before anything was sent).
  Following the seed, metadata is ``None`` on error; the producer tells the exception which
  partition it concerns as ``exception.topic_partition`` (partition -1 when the failure came
  before one was chosen), the partial information released Kafka puts in its metadata.
* ``ConsumerInterceptor.on_consume(records)`` in ``poll()``, just before it returns; poll
  returns what the last interceptor returned.
* ``ConsumerInterceptor.on_commit(offsets)`` once the group coordinator acknowledged a commit.
* ``close()`` when the client closes, once per interceptor.

Every exception an interceptor raises is logged and swallowed, and the chain goes on with the
next interceptor: for ``on_send`` / ``on_consume`` the next one receives the record(s) as they
were before the failing interceptor (the seed's chain only assigns what a call returned). A
return value of the wrong type counts as such a failure.

``ClusterResourceListener.on_update(cluster)`` is called on interceptors, serialisers and
deserialisers that implement it after every Metadata response the client receives (KIP-78),
so ``on_send`` may run before the cluster id is known.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.client.record_types import (
    ConsumerRecords,
    OffsetAndMetadata,
    ProducerRecord,
    RecordMetadata,
    TopicPartition,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterResource:
    """What a client knows of the cluster it talks to: its id (None from brokers before v2)."""

    cluster_id: str | None


class ClusterResourceListener:
    """Told the cluster's id after each Metadata response (KIP-78)."""

    def on_update(self, cluster: ClusterResource) -> None:
        pass


class ProducerInterceptor:
    """Base class: every callback does nothing (override what you need)."""

    def configure(self, config: Mapping[str, Any]) -> None:
        pass

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        return record

    def on_acknowledgement(
        self, metadata: RecordMetadata | None, exception: BaseException | None
    ) -> None:
        pass

    def close(self) -> None:
        pass


class ConsumerInterceptor:
    """Base class: every callback does nothing (override what you need)."""

    def configure(self, config: Mapping[str, Any]) -> None:
        pass

    def on_consume(self, records: ConsumerRecords) -> ConsumerRecords:
        return records

    def on_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        pass

    def close(self) -> None:
        pass


def instantiate(items: Iterable[Any], config: Mapping[str, Any]) -> list[Any]:
    """Instances of the configured interceptors (classes are instantiated), each configured."""
    out = []
    for item in items:
        obj = item() if isinstance(item, type) else item
        obj.configure(dict(config))
        out.append(obj)
    return out


def _call(obj: Any, what: str, *args: Any) -> tuple[bool, Any]:
    """Call ``obj.what(*args)``; (False, None) and a log line when it raises."""
    try:
        return True, getattr(obj, what)(*args)
    except Exception:
        log.warning("%r raised in %s; ignored", obj, what, exc_info=True)
        return False, None


class _Chain:
    def __init__(self, interceptors: Sequence[Any]) -> None:
        self.interceptors = list(interceptors)
        self.closed = False

    def close(self) -> None:
        """Close each interceptor once, whatever the others do (later calls do nothing)."""
        if self.closed:
            return
        self.closed = True
        for i in self.interceptors:
            _call(i, "close")


class ProducerInterceptors(_Chain):
    """The producer's chain (the seed's ``ProducerInterceptors``)."""

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        current = record
        for i in self.interceptors:
            ok, out = _call(i, "on_send", current)
            if not ok:
                continue
            if not isinstance(out, ProducerRecord):
                log.warning(
                    "interceptor %r returned %s from on_send, not a ProducerRecord; ignored",
                    i,
                    type(out).__name__,
                )
                continue
            current = out
        return current

    def on_acknowledgement(
        self, metadata: RecordMetadata | None, exception: BaseException | None
    ) -> None:
        for i in self.interceptors:
            _call(i, "on_acknowledgement", metadata, exception)


class ConsumerInterceptors(_Chain):
    """The consumer's chain (the seed's ``ConsumerInterceptors``)."""

    def on_consume(self, records: ConsumerRecords) -> ConsumerRecords:
        current = records
        for i in self.interceptors:
            ok, out = _call(i, "on_consume", current)
            if not ok:
                continue
            if not isinstance(out, ConsumerRecords):
                log.warning(
                    "interceptor %r returned %s from on_consume, not ConsumerRecords; ignored",
                    i,
                    type(out).__name__,
                )
                continue
            current = out
        return current

    def on_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        for i in self.interceptors:
            _call(i, "on_commit", dict(offsets))


class ClusterResourceListeners:
    """The parts of a client that want the cluster id (those with an ``on_update`` method)."""

    def __init__(self, candidates: Iterable[Any] = ()) -> None:
        self.listeners: list[Any] = []
        for c in candidates:
            self.add(c)

    def add(self, candidate: Any) -> None:
        if callable(getattr(candidate, "on_update", None)) and candidate not in self.listeners:
            self.listeners.append(candidate)

    def on_update(self, cluster: ClusterResource) -> None:
        for listener in self.listeners:
            _call(listener, "on_update", cluster)
