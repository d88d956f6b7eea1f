"""Where the coordinator's records go: an append-only log per ``__consumer_offsets`` partition.

The coordinator only appends (with acks=all semantics: ``done`` is called once the append is
durable, or failed, with Kafka's error code) and, when it takes over a partition, replays
it. ``MemoryOffsetsStore`` is the in-process log the library's tests use; it stores real
RecordBatch v2 bytes so the encoding is exercised exactly as on a broker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from conformance.protocol.records import build_batch, decode_batches, encode_batch

#: (error code, log offset of the first appended record)
AppendDone = Callable[[int, int], None]
#: (key, value); a None value is a tombstone
KeyValue = tuple[bytes, bytes | None]


class OffsetsStore(Protocol):
    def append(self, partition: int, records: list[KeyValue], done: AppendDone) -> None:
        """Append ``records`` as one batch to ``partition``; call ``done`` when settled."""
        ...


def encode_records(records: Iterable[KeyValue], timestamp_ms: int, base_offset: int = 0) -> bytes:
    """One uncompressed RecordBatch v2 holding ``records``."""
    items = [(timestamp_ms, key, value) for key, value in records]
    return encode_batch(build_batch(items, base_offset=base_offset))


def decode_records(data: bytes) -> tuple[list[tuple[int, bytes, bytes | None]], int]:
    """(offset, key, value) of every record in ``data`` (whole v2 batches; a torn tail is
    ignored; control batches skipped), and the offset after the last whole batch (-1: none)."""
    out: list[tuple[int, bytes, bytes | None]] = []
    next_offset = -1
    for batch in decode_batches(data, allow_partial=True):
        next_offset = batch.next_offset
        if batch.is_control:
            continue
        for record in batch.log_records():
            if record.key is not None:
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
        self._held: list[tuple[int, list[KeyValue], AppendDone]] = []
        self._clock = clock

    def append(self, partition: int, records: list[KeyValue], done: AppendDone) -> None:
        if self.hold:
            self._held.append((partition, records, done))
            return
        self._write(partition, records, done)

    def _write(self, partition: int, records: list[KeyValue], done: AppendDone) -> None:
        if self.fail_with is not None:
            done(self.fail_with, -1)
            return
        base = self.next_offset.get(partition, 0)
        self.logs.setdefault(partition, []).append(encode_records(records, self._clock(), base))
        self.next_offset[partition] = base + len(records)
        done(0, base)

    def release(self) -> None:
        held, self._held = self._held, []
        for partition, records, done in held:
            self._write(partition, records, done)

    def fail_held(self, partition: int, error: int) -> None:
        """Fail the held appends to ``partition`` unwritten (its leader changed meanwhile)."""
        failed = [h for h in self._held if h[0] == partition]
        self._held = [h for h in self._held if h[0] != partition]
        for _, _, done in failed:
            done(error, -1)

    def read(self, partition: int) -> list[tuple[int, bytes, bytes | None]]:
        return decode_records(b"".join(self.logs.get(partition, [])))[0]
