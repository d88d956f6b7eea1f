"""Splitting a ``records`` field into its log entries (v2 batches or legacy messages).

Every message format starts ``offset int64, size int32`` and has its magic byte at offset 16,
so entries can be delimited without decoding them. A fetch response may end in the middle of
an entry: that tail is reported separately, never merged into a batch.
"""

from __future__ import annotations

import struct

from conformance.protocol.records.errors import CorruptRecordError, PartialBatchError

LOG_OVERHEAD = 12  # offset int64 + size int32
MAGIC_OFFSET = 16
# The smallest size a well-formed entry can claim: a magic 0 message with null key and value.
MIN_ENTRY_SIZE = 14

_I32 = struct.Struct(">i")


def scan_entries(data: bytes) -> tuple[list[tuple[int, int, int]], int]:
    """``(start, end, magic)`` of each complete entry, and where the partial tail starts.

    The tail start is ``len(data)`` when the data ends on an entry boundary. A size field below
    the minimum is corruption, not a partial entry.
    """
    spans: list[tuple[int, int, int]] = []
    pos, n = 0, len(data)
    while n - pos >= LOG_OVERHEAD:
        (size,) = _I32.unpack_from(data, pos + 8)
        if size < MIN_ENTRY_SIZE:
            raise CorruptRecordError(
                f"entry size {size} is less than the minimum {MIN_ENTRY_SIZE}",
                offset=pos + 8,
                path=f"batch[{len(spans)}].length",
            )
        end = pos + LOG_OVERHEAD + size
        if end > n:
            break
        magic = data[pos + MAGIC_OFFSET]
        spans.append((pos, end, magic - 256 if magic > 127 else magic))
        pos = end
    return spans, pos


def complete_entries(data: bytes, *, allow_partial: bool, noun: str) -> list[tuple[int, int, int]]:
    """The complete entries; a partial tail raises PartialBatchError unless ``allow_partial``."""
    spans, tail = scan_entries(data)
    if tail != len(data) and not allow_partial:
        raise PartialBatchError(
            f"data ends inside a {noun}: {len(data) - tail} trailing bytes",
            offset=tail,
            path=f"{noun}[{len(spans)}]",
        )
    return spans


def split_batches(data: bytes) -> tuple[list[bytes], bytes]:
    """The raw bytes of each complete entry, untouched, and the partial tail (``b""`` if none)."""
    spans, tail = scan_entries(data)
    return [bytes(data[s:e]) for s, e, _ in spans], bytes(data[tail:])
