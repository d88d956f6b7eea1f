"""Where the coordinator's records go: an append-only log per ``__consumer_offsets`` partition.

The coordinator only appends (with acks=all semantics: ``done`` is called once the append is
durable, or failed, with Kafka's error code) and, when it takes over a partition, replays
it. ``MemoryOffsetsStore`` is the in-process log the library's tests use; it stores real
RecordBatch v2 bytes so the encoding is exercised exactly as on a broker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from conformance.protocol.records import (
    ControlType,
    build_batch,
    control_batch,
    decode_batches,
    encode_batch,
)

#: (error code, log offset of the first appended record)
AppendDone = Callable[[int, int], None]
#: (key, value); a None value is a tombstone
KeyValue = tuple[bytes, bytes | None]


#: (producer id, producer epoch) of a transactional append (TxnOffsetCommit)
Producer = tuple[int, int]
Txn = Producer | None
Records = list[KeyValue]
#: what a replay reads: (offset, key, value) for a plain record; (offset, key, value, producer
#: id) for a record of a transaction; (offset, b"", None, producer id, control type) for a
#: transaction marker (ControlType.COMMIT / ABORT)
LoadedRecord = tuple


class OffsetsStore(Protocol):
    def append(self, partition: int, records: Records, done: AppendDone, txn: Txn = None) -> None:
        """Append ``records`` as one batch to ``partition`` (a transactional batch of the
        producer ``txn`` when given); call ``done`` when settled."""
        ...


def encode_records(
    records: Iterable[KeyValue],
    timestamp_ms: int,
    base_offset: int = 0,
    producer: Producer | None = None,
) -> bytes:
    """One uncompressed RecordBatch v2 holding ``records``; with ``producer`` a transactional
    batch of that producer id and epoch, sequence 0, as Kafka's coordinator writes one."""
    items = [(timestamp_ms, key, value) for key, value in records]
    txn: dict[str, object] = {}
    if producer is not None:
        txn = dict(
            producer_id=producer[0],
            producer_epoch=producer[1],
            base_sequence=0,
            is_transactional=True,
        )
    return encode_batch(build_batch(items, base_offset=base_offset, **txn))


def decode_records(data: bytes) -> tuple[list[tuple[int, bytes, bytes | None]], int]:
    """(offset, key, value) of every record in ``data`` (whole v2 batches; a torn tail is
    ignored; control batches skipped), and the offset after the last whole batch (-1: none)."""
    out, next_offset = decode_loaded(data)
    return [r[:3] for r in out if len(r) < 5], next_offset


def decode_loaded(data: bytes) -> tuple[list[LoadedRecord], int]:
    """The records of ``data`` as the group coordinator's replay reads them (``LoadedRecord``:
    transactional records and markers told apart; whole v2 batches, a torn tail ignored), and
    the offset after the last whole batch (-1: none)."""
    out: list[LoadedRecord] = []
    next_offset = -1
    for batch in decode_batches(data, allow_partial=True):
        next_offset = batch.next_offset
        if batch.is_control:
            for kind in batch.control_types():
                out.append((batch.base_offset, b"", None, batch.producer_id, kind))
            continue
        for record in batch.log_records():
            if record.key is None:
                continue
            if batch.is_transactional:
                out.append((record.offset, record.key, record.value, batch.producer_id))
            else:
                out.append((record.offset, record.key, record.value))
    return out, next_offset


class MemoryOffsetsStore:
    """Batches in memory. ``hold`` keeps appends pending until ``release``; ``fail_with`` makes
    the next appends fail with that error code (nothing is written)."""

    def __init__(self, clock: Callable[[], int] = lambda: 0) -> None:
        self.logs: dict[int, list[bytes]] = {}
        self.next_offset: dict[int, int] = {}
        self.hold = False
        self.fail_with: int | None = None
        self._held: list[tuple[int, list[KeyValue], AppendDone, Producer | None]] = []
        self._clock = clock

    def append(self, partition: int, records: Records, done: AppendDone, txn: Txn = None) -> None:
        if self.hold:
            self._held.append((partition, records, done, txn))
            return
        self._write(partition, records, done, txn)

    def _write(
        self,
        partition: int,
        records: list[KeyValue],
        done: AppendDone,
        producer: Producer | None = None,
    ) -> None:
        if self.fail_with is not None:
            done(self.fail_with, -1)
            return
        base = self.next_offset.get(partition, 0)
        data = encode_records(records, self._clock(), base, producer)
        self.logs.setdefault(partition, []).append(data)
        self.next_offset[partition] = base + len(records)
        done(0, base)

    def write_marker(self, partition: int, producer: Producer, commit: bool) -> int:
        """A transaction marker in the in-memory log (what WriteTxnMarkers writes on a broker);
        returns its offset."""
        base = self.next_offset.get(partition, 0)
        kind = ControlType.COMMIT if commit else ControlType.ABORT
        batch = control_batch(
            kind,
            producer_id=producer[0],
            producer_epoch=producer[1],
            coordinator_epoch=0,
            timestamp=self._clock(),
            base_offset=base,
        )
        self.logs.setdefault(partition, []).append(encode_batch(batch))
        self.next_offset[partition] = base + 1
        return base

    def release(self) -> None:
        held, self._held = self._held, []
        for partition, records, done, producer in held:
            self._write(partition, records, done, producer)

    def fail_held(self, partition: int, error: int) -> None:
        """Fail the held appends to ``partition`` unwritten (its leader changed meanwhile)."""
        failed = [h for h in self._held if h[0] == partition]
        self._held = [h for h in self._held if h[0] != partition]
        for _, _, done, _ in failed:
            done(error, -1)

    def read(self, partition: int) -> list[LoadedRecord]:
        return decode_loaded(b"".join(self.logs.get(partition, [])))[0]
