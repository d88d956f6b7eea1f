"""The sparse per-segment indexes: offset → file position, and timestamp → offset.

Both are append-only files of fixed-size big-endian entries, mirrored in memory as arrays (a
segment's index is small: one entry per ``index_interval_bytes`` of log). Offsets are stored
relative to the segment's base offset, as Kafka does. An index file is a cache: when it is
missing or does not agree with its segment, the segment rebuilds it by scanning its batches.
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right
from pathlib import Path

_OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, position
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset


class OffsetIndex:
    """``(relative offset, position)`` of the first batch of every index interval."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offsets = array("i")
        self.positions = array("i")
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)

    def load(self, segment_size: int) -> bool:
        """Read the file; False (and empty) when it is damaged or disagrees with the segment."""
        raw = os.pread(self._fd, os.fstat(self._fd).st_size, 0)
        if len(raw) % _OFFSET_ENTRY.size:
            return False
        last_off = last_pos = -1
        for off, pos in _OFFSET_ENTRY.iter_unpack(raw):
            if off <= last_off or pos <= last_pos or pos >= segment_size:
                self.reset()
                return False
            self.offsets.append(off)
            self.positions.append(pos)
            last_off, last_pos = off, pos
        return True

    def append(self, relative_offset: int, position: int) -> None:
        self.offsets.append(relative_offset)
        self.positions.append(position)
        os.write(self._fd, _OFFSET_ENTRY.pack(relative_offset, position))

    def lookup(self, relative_offset: int) -> int:
        """Position of the last indexed batch starting at or before ``relative_offset`` (or 0)."""
        i = bisect_right(self.offsets, relative_offset)
        return self.positions[i - 1] if i else 0

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or beyond ``position`` (the segment was cut there)."""
        n = bisect_right(self.positions, position - 1)
        self._cut(n)

    def _cut(self, n: int) -> None:
        del self.offsets[n:]
        del self.positions[n:]
        os.ftruncate(self._fd, n * _OFFSET_ENTRY.size)

    def reset(self) -> None:
        self._cut(0)

    def flush(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


class TimeIndex:
    """``(max timestamp so far, relative offset of the batch holding it)``, timestamps rising."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.timestamps = array("q")
        self.offsets = array("i")
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)

    def load(self, max_relative_offset: int) -> bool:
        raw = os.pread(self._fd, os.fstat(self._fd).st_size, 0)
        if len(raw) % _TIME_ENTRY.size:
            return False
        last_ts, last_off = -(2**63), -1
        for ts, off in _TIME_ENTRY.iter_unpack(raw):
            if ts <= last_ts or off < last_off or off > max_relative_offset:
                self.reset()
                return False
            self.timestamps.append(ts)
            self.offsets.append(off)
            last_ts, last_off = ts, off
        return True

    @property
    def last_timestamp(self) -> int:
        return self.timestamps[-1] if self.timestamps else -1

    def maybe_append(self, timestamp: int, relative_offset: int) -> None:
        if timestamp > self.last_timestamp:
            self.timestamps.append(timestamp)
            self.offsets.append(relative_offset)
            os.write(self._fd, _TIME_ENTRY.pack(timestamp, relative_offset))

    def lookup(self, timestamp: int) -> int:
        """A relative offset from which every record at or after ``timestamp`` lies ahead.

        Entries with a timestamp strictly below the target prove that everything up to their
        offset is older than the target; the search starts at the last such offset (or 0).
        """
        i = bisect_right(self.timestamps, timestamp - 1)
        return self.offsets[i - 1] if i else 0

    def truncate_to_offset(self, relative_offset: int) -> None:
        """Drop entries for offsets at or beyond ``relative_offset``."""
        n = 0
        while n < len(self.offsets) and self.offsets[n] < relative_offset:
            n += 1
        del self.timestamps[n:]
        del self.offsets[n:]
        os.ftruncate(self._fd, n * _TIME_ENTRY.size)

    def reset(self) -> None:
        self.truncate_to_offset(-1)

    def flush(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)
