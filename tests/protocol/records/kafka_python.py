"""Reading and building record bytes with kafka-python, the independent implementation the
differential tests compare against (kafka.record.*, with python-snappy and xxhash present)."""

from __future__ import annotations

from typing import Any

from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder


def read_all(data: bytes) -> list[Any]:
    """kafka-python's batch objects for every complete entry in ``data``."""
    records = MemoryRecords(bytes(data))
    out = []
    while records.has_next():
        out.append(records.next_batch())
    return out


def record_tuples(batch: Any) -> list[tuple[Any, ...]]:
    """(offset, timestamp, timestamp_type, key, value, headers) as kafka-python iterates them."""
    return [
        (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, list(r.headers)) for r in batch
    ]


def build(
    magic: int,
    compression: int,
    items: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    **producer: Any,
) -> bytes:
    """A batch (magic 2) or message set (magic 0/1) as kafka-python's producer builds it."""
    builder = MemoryRecordsBuilder(magic, compression, batch_size=1 << 30, **producer)
    for ts, key, value, headers in items:
        assert builder.append(ts, key, value, headers if magic == 2 else None) is not None
    builder.close()
    return bytes(builder.buffer())
