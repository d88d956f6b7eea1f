"""One log segment: a file of v2 batches back to back, with its offset and time indexes.

Files are named after the segment's base offset, zero-padded to 20 digits as Kafka does
(``00000000000000000042.log``, ``.index``, ``.timeindex``). Batches are written exactly as
they will be served. Reads hand back the stored bytes, cut at batch boundaries.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

from conformance.protocol.records.header import (
    HEADER_SIZE,
    LAST_OFFSET_DELTA_OFFSET,
    LOG_OVERHEAD,
    MAGIC,
    BatchHeader,
    crc_ok,
    last_offset_delta,
    offset_and_length,
    parse_header,
)
from reference_impl.log.index import OffsetIndex, TimeIndex

_SCAN_CHUNK = 64 * 1024
#: baseOffset .. lastOffsetDelta: enough to delimit a batch and know its offsets
_PEEK = LAST_OFFSET_DELTA_OFFSET + 4


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class Segment:
    """A segment file and its indexes; not thread-safe, owned by one PartitionLog."""

    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int) -> None:
        self.base_offset = base_offset
        name = segment_name(base_offset)
        self.path = directory / f"{name}.log"
        self.index_interval_bytes = index_interval_bytes
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self.fd).st_size
        self.offset_index = OffsetIndex(directory / f"{name}.index")
        self.time_index = TimeIndex(directory / f"{name}.timeindex")
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.bytes_since_index = 0
        self.created = time.time()
        self.closed = False

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> bool:
        """Trust the index files of a segment closed cleanly; False when they need rebuilding.

        Only the end of the segment is derived here (from the last indexed batch onward).
        """
        if not self.offset_index.load(self.size) or (self.size and not self.offset_index.offsets):
            return False
        start = self.offset_index.positions[-1] if self.offset_index.offsets else 0
        last = None
        if not self.time_index.load(2**31 - 1):
            return False
        self.max_timestamp = self.time_index.last_timestamp
        if self.time_index.offsets:
            self.offset_of_max_timestamp = self.base_offset + self.time_index.offsets[-1]
        for h in self.headers_from(start):
            last = h
            if h.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = h.max_timestamp, h.base_offset
        if last is None or last.end != self.size:
            return False
        last_rel = last.base_offset - self.base_offset
        if self.time_index.offsets and self.time_index.offsets[-1] > last_rel:
            return False
        self.next_offset = last.next_offset
        self.bytes_since_index = self.size - self.offset_index.positions[-1]
        return True

    def recover(self) -> tuple[int, list[BatchHeader]]:
        """Validate every batch, rebuild both indexes, cut the file at the first bad batch.

        A batch is bad when its header runs past the end of the file (a torn write), its length
        is impossible, its magic is not 2, its offsets go backwards, or its CRC-32C does not
        match. Returns the number of bytes cut off and the headers of the batches kept.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.next_offset, self.max_timestamp, self.bytes_since_index = self.base_offset, -1, 0
        self.offset_of_max_timestamp = self.base_offset
        kept: list[BatchHeader] = []
        pos = 0
        while pos + HEADER_SIZE <= self.size:
            head = os.pread(self.fd, HEADER_SIZE, pos)
            h = parse_header(head)
            if (
                h.length < HEADER_SIZE
                or pos + h.length > self.size
                or h.magic != MAGIC
                or h.base_offset < self.next_offset
                or h.last_offset_delta < 0
            ):
                break
            body = os.pread(self.fd, h.length, pos)
            if not crc_ok(body, h):
                break
            h = parse_header(body)
            kept.append(replace(h, position=pos))
            self._indexed(pos, h.base_offset, h.next_offset, h.length, h.max_timestamp)
            pos += h.length
        cut = self.size - pos
        if cut:
            os.ftruncate(self.fd, pos)
            self.size = pos
        return cut, kept

    # -- writing ---------------------------------------------------------------------------

    def append(
        self,
        data: bytes | bytearray | memoryview | list,
        first: BatchHeader,
        last: BatchHeader,
        max_timestamp: int,
    ) -> None:
        """Append whole batches (``first``..``last`` are the first and last of them); ``data``
        may be a list of buffers, written with one writev."""
        position = self.size
        parts = data if isinstance(data, list) else [data]
        total = sum(len(memoryview(x)) for x in parts)
        written = os.writev(self.fd, parts)
        if written < total:  # a short write: finish the rest the slow way
            rest = memoryview(b"".join(bytes(x) for x in parts))[written:]
            while rest:
                rest = rest[os.write(self.fd, rest) :]
        self.size += total
        self._indexed(
            position, first.base_offset, last.next_offset, total, max_timestamp, last.base_offset
        )

    def _indexed(
        self,
        position: int,
        base_offset: int,
        next_offset: int,
        nbytes: int,
        max_timestamp: int,
        last_base: int | None = None,
    ) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = base_offset if last_base is None else last_base
        if not self.offset_index.offsets or self.bytes_since_index >= self.index_interval_bytes:
            self.offset_index.append(base_offset - self.base_offset, position)
            self.bytes_since_index = 0
            self._time_entry()
        self.bytes_since_index += nbytes
        self.next_offset = next_offset

    def _time_entry(self) -> None:
        if self.max_timestamp >= 0:
            rel = self.offset_of_max_timestamp - self.base_offset
            self.time_index.maybe_append(self.max_timestamp, rel)

    def seal(self) -> None:
        """The segment stops being the active one: index its latest max timestamp."""
        self._time_entry()

    def flush(self) -> None:
        os.fsync(self.fd)
        self.offset_index.flush()
        self.time_index.flush()

    # -- reading ---------------------------------------------------------------------------

    def headers_from(self, position: int, end: int | None = None):
        """Yield the header of every batch from ``position`` (a batch start) to ``end``."""
        end = self.size if end is None else end
        pos = position
        while pos + HEADER_SIZE <= end:
            chunk = os.pread(self.fd, min(_SCAN_CHUNK, end - pos), pos)
            at = 0
            while at + HEADER_SIZE <= len(chunk):
                h = parse_header(chunk, at)
                if h.length < HEADER_SIZE:
                    return
                yield replace(h, position=pos + at)
                at += h.length
            if at == 0:
                return
            pos += at

    def position_of(self, offset: int) -> tuple[int, int] | None:
        """``(position, base offset)`` of the first batch whose last offset is >= ``offset``."""
        pos = self.offset_index.lookup(offset - self.base_offset)
        while pos + LOG_OVERHEAD <= self.size:
            chunk = os.pread(self.fd, min(_SCAN_CHUNK, self.size - pos), pos)
            at = 0
            while at + _PEEK <= len(chunk):
                base, length = offset_and_length(chunk, at)
                if base + last_offset_delta(chunk, at) >= offset:
                    return pos + at, base
                if length < HEADER_SIZE:
                    return None
                at += length
            if at == 0:
                return None
            pos += at
        return None

    def read(self, position: int, max_bytes: int, max_offset: int, min_one: bool) -> bytes:
        """Whole batches from ``position`` holding offsets below ``max_offset``, within
        ``max_bytes`` — except that with ``min_one`` the first batch is returned whole even
        when it is larger (so that a consumer can always make progress)."""
        avail = self.size - position
        want = min(max(max_bytes, 0), avail)
        if min_one:
            want = max(want, min(avail, _PEEK))
        data = os.pread(self.fd, want, position)
        at, n = 0, len(data)
        while at + _PEEK <= n:
            base, length = offset_and_length(data, at)
            if base + last_offset_delta(data, at) >= max_offset:
                break
            if at + length > n:
                if at == 0 and min_one and position + length <= self.size:
                    return os.pread(self.fd, length, position)
                break
            at += length
        return data if at == n else data[:at]

    def find_timestamp(self, timestamp: int) -> int | None:
        """Base offset of the first batch whose max timestamp is >= ``timestamp``."""
        start_rel = self.time_index.lookup(timestamp)
        start = self.offset_index.lookup(start_rel)
        for h in self.headers_from(start):
            if h.max_timestamp >= timestamp:
                return h.base_offset
        return None

    def batch_at(self, position: int) -> bytes:
        _, length = offset_and_length(os.pread(self.fd, LOG_OVERHEAD, position), 0)
        return os.pread(self.fd, length, position)

    # -- cutting ---------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding ``offset`` or later; returns the bytes removed."""
        found = self.position_of(offset)
        if found is None:
            return 0
        position = found[0]
        removed = self.size - position
        os.ftruncate(self.fd, position)
        self.size = position
        self.offset_index.truncate_to_position(position)
        self.time_index.truncate_to_offset(found[1] - self.base_offset)
        # re-derive the segment's end from what is left
        self.next_offset = self.base_offset
        self.max_timestamp = self.time_index.last_timestamp
        if self.time_index.offsets:
            self.offset_of_max_timestamp = self.base_offset + self.time_index.offsets[-1]
        start = self.offset_index.positions[-1] if self.offset_index.offsets else 0
        for h in self.headers_from(start):
            self.next_offset = h.next_offset
            if h.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = h.max_timestamp, h.base_offset
        self.bytes_since_index = (
            self.size - self.offset_index.positions[-1] if self.offset_index.offsets else 0
        )
        return removed

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self.fd)
            self.offset_index.close()
            self.time_index.close()

    def delete(self) -> None:
        self.close()
        for p in (self.path, self.offset_index.path, self.time_index.path):
            p.unlink(missing_ok=True)
