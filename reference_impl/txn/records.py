"""``__transaction_state`` records in Kafka's layout (TransactionLogKey v0, TransactionLogValue v0).

Key: int16 version (0), string transactional id. Value: int16 version (0), int64 producer id,
int16 producer epoch, int32 transaction timeout, int8 state id, nullable array of (string topic,
array of int32 partition), int64 last update time, int64 transaction start time. A transactional
id whose value is a tombstone (None) has been removed. Kafka writes value v1 (flexible, tagged
producer ids) only for KIP-890's transaction version 2, which the reference does not speak.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

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


def _string(s: str) -> bytes:
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def encode_key(transactional_id: str) -> bytes:
    return struct.pack(">h", KEY_VERSION) + _string(transactional_id)


def encode_value(r: TxnRecord) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(r.partitions):
        by_topic.setdefault(topic, []).append(partition)
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


def decode_key(data: bytes) -> str | None:
    """The transactional id of a key, or None for a key of another layout."""
    r = _Reader(data)
    (version,) = r.take(">h")
    return r.string() if version == KEY_VERSION else None


def decode_value(data: bytes) -> TxnRecord:
    r = _Reader(data)
    version, pid, epoch, timeout, state = r.take(">hqhib")
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
