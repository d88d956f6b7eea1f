"""``__transaction_state`` records in Kafka's layout (TransactionLogKey v0, TransactionLogValue v0).

Key: int16 version (0), string transactional id. Value: int16 version (0), int64 producer id,
int16 producer epoch, int32 transaction timeout, int8 state id, nullable array of (string topic,
array of int32 partition), int64 last update time, int64 transaction start time. A transactional
id whose value is a tombstone (None) has been removed. Value v1 (flexible: compact strings and
arrays, tagged fields PreviousProducerId 0, NextProducerId 1, ClientTransactionVersion 2) is
written, as Kafka 4.x does, for a transaction of a transaction-version-2 client (KIP-890 part 2);
v0 otherwise.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from conformance.protocol.records.wire import write_uvarint
from reference_impl.txn.state import TxnState

KEY_VERSION = 0
VALUE_VERSION = 0


@dataclass(frozen=True)
class TxnRecord:
    """What one value record says of a transactional id."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[tuple[str, int]]
    update_ms: int
    start_ms: int
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_tv: int = 0


def _uvarint(n: int) -> bytes:
    out = bytearray()
    write_uvarint(out, n)
    return bytes(out)


def _compact_string(s: str) -> bytes:
    data = s.encode()
    return _uvarint(len(data) + 1) + data


def _string(s: str) -> bytes:
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def encode_key(transactional_id: str) -> bytes:
    return struct.pack(">h", KEY_VERSION) + _string(transactional_id)


def _tagged(r: TxnRecord) -> list[tuple[int, bytes]]:
    fields = []
    if r.previous_producer_id != -1:
        fields.append((0, struct.pack(">q", r.previous_producer_id)))
    if r.next_producer_id != -1:
        fields.append((1, struct.pack(">q", r.next_producer_id)))
    if r.client_tv:
        fields.append((2, struct.pack(">h", r.client_tv)))
    return fields


def encode_value(r: TxnRecord) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(r.partitions):
        by_topic.setdefault(topic, []).append(partition)
    if r.client_tv >= 2:
        return _encode_v1(r, by_topic, _tagged(r))
    out = [
        struct.pack(
            ">hqhib", VALUE_VERSION, r.producer_id, r.producer_epoch, r.timeout_ms, int(r.state)
        )
    ]
    out.append(struct.pack(">i", len(by_topic)))
    for topic, parts in by_topic.items():
        out.append(_string(topic))
        out.append(struct.pack(f">i{len(parts)}i", len(parts), *parts))
    out.append(struct.pack(">qq", r.update_ms, r.start_ms))
    return b"".join(out)


def _encode_v1(
    r: TxnRecord, by_topic: dict[str, list[int]], tagged: list[tuple[int, bytes]]
) -> bytes:
    out = [struct.pack(">hqhib", 1, r.producer_id, r.producer_epoch, r.timeout_ms, int(r.state))]
    out.append(_uvarint(len(by_topic) + 1))
    for topic, parts in by_topic.items():
        out.append(_compact_string(topic))
        out.append(_uvarint(len(parts) + 1) + struct.pack(f">{len(parts)}i", *parts))
        out.append(b"\x00")  # the entry's tagged fields: none
    out.append(struct.pack(">qq", r.update_ms, r.start_ms))
    out.append(_uvarint(len(tagged)))
    for tag, data in tagged:
        out.append(_uvarint(tag) + _uvarint(len(data)) + data)
    return b"".join(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def string(self) -> str:
        (n,) = self.take(">h")
        if n < 0:
            raise ValueError("null string in a transaction record")
        s = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return s

    def uvarint(self) -> int:
        n = shift = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            n |= (b & 0x7F) << shift
            if b < 0x80:
                return n
            shift += 7

    def compact_string(self) -> str:
        n = self.uvarint() - 1
        if n < 0:
            raise ValueError("null string in a transaction record")
        s = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return s


def decode_key(data: bytes) -> str | None:
    """The transactional id of a key, or None for a key of another layout."""
    r = _Reader(data)
    (version,) = r.take(">h")
    return r.string() if version == KEY_VERSION else None


def decode_value(data: bytes) -> TxnRecord:
    r = _Reader(data)
    version, pid, epoch, timeout, state = r.take(">hqhib")
    if version == 1:
        return _decode_v1(r, pid, epoch, timeout, state)
    if version != VALUE_VERSION:
        raise ValueError(f"transaction value version {version} is not read by the reference")
    partitions: set[tuple[str, int]] = set()
    (count,) = r.take(">i")
    for _ in range(max(count, 0)):
        topic = r.string()
        (n,) = r.take(">i")
        partitions.update((topic, p) for p in r.take(f">{max(n, 0)}i"))
    update_ms, start_ms = r.take(">qq")
    return TxnRecord(
        pid, epoch, timeout, TxnState(state), frozenset(partitions), update_ms, start_ms
    )


def _decode_v1(r: _Reader, pid: int, epoch: int, timeout: int, state: int) -> TxnRecord:
    partitions: set[tuple[str, int]] = set()
    for _ in range(max(r.uvarint() - 1, 0)):
        topic = r.compact_string()
        n = max(r.uvarint() - 1, 0)
        partitions.update((topic, p) for p in r.take(f">{n}i"))
        _skip_tagged(r)
    update_ms, start_ms = r.take(">qq")
    tags: dict[int, bytes] = {}
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        tags[tag] = r.data[r.pos : r.pos + size]
        r.pos += size
    return TxnRecord(
        pid,
        epoch,
        timeout,
        TxnState(state),
        frozenset(partitions),
        update_ms,
        start_ms,
        struct.unpack(">q", tags[0])[0] if 0 in tags else -1,
        struct.unpack(">q", tags[1])[0] if 1 in tags else -1,
        struct.unpack(">h", tags[2])[0] if 2 in tags else 0,
    )


def _skip_tagged(r: _Reader) -> None:
    for _ in range(r.uvarint()):
        r.uvarint()
        r.pos += r.uvarint()
