"""A whole ``records`` field of any message format: v2 batches and legacy messages mixed.

A log may hold batches of several formats (data written before and after an upgrade), and a
fetch response may end inside one; this reads all of them in order and hands back the tail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from conformance.protocol.records.batch import MAGIC, RecordBatch, decode_batch_at, encode_batch
from conformance.protocol.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from conformance.protocol.records.entries import MAGIC_OFFSET, scan_entries
from conformance.protocol.records.errors import CorruptRecordError
from conformance.protocol.records.legacy import LegacyMessage, decode_message_at, encode_message
from conformance.protocol.records.record import LogRecord


@dataclass(frozen=True)
class RecordSet:
    """The entries of a ``records`` field and the partial entry it ended with (``b""``: none)."""

    entries: tuple[RecordBatch | LegacyMessage, ...]
    partial: bytes = b""

    def log_records(self) -> list[LogRecord]:
        """Every record, in order, with absolute offsets and timestamps."""
        return [r for entry in self.entries for r in entry.log_records()]


def decode_record_set(
    data: bytes, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> RecordSet:
    """Decode each entry by its magic (0, 1: legacy message; 2: batch); keep the partial tail."""
    data = bytes(data)
    spans, tail = scan_entries(data)
    entries: list[RecordBatch | LegacyMessage] = []
    for i, (start, end, magic) in enumerate(spans):
        if magic == MAGIC:
            entries.append(
                decode_batch_at(
                    data, start, end, index=i, max_decompressed_size=max_decompressed_size
                )
            )
        elif magic in (0, 1):
            entries.append(
                decode_message_at(
                    data,
                    start,
                    end,
                    path=f"batch[{i}]",
                    max_decompressed_size=max_decompressed_size,
                )
            )
        else:
            raise CorruptRecordError(
                f"unknown magic {magic}", offset=start + MAGIC_OFFSET, path=f"batch[{i}].magic"
            )
    return RecordSet(tuple(entries), data[tail:])


def encode_record_set(entries: Sequence[RecordBatch | LegacyMessage]) -> bytes:
    """Entries back to back, each encoded in its own format."""
    return b"".join(
        encode_batch(e) if isinstance(e, RecordBatch) else encode_message(e) for e in entries
    )
