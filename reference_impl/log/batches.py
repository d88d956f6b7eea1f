"""Reading v2 batch headers straight out of stored bytes, without decoding any record.

The log never decodes records on its own paths (append as follower, read, recovery): it needs
only each batch's header (offsets, length, timestamps, producer fields, leader epoch), and the
CRC-32C over the bytes after the CRC field to validate a batch found on disk.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from crc32c import crc32c

#: baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
#: baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordCount
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes not counted by batchLength
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21  # the CRC covers from here to the end of the batch
LEADER_EPOCH_OFFSET = 12
_OFFSET_LENGTH = struct.Struct(">qi")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_U32 = struct.Struct(">I")

TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
NO_PRODUCER_ID = -1


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The header of one stored v2 batch and where it sits (``position`` into its buffer)."""

    position: int
    base_offset: int
    length: int  # whole batch, LOG_OVERHEAD included
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return self.base_sequence
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)

    @property
    def end(self) -> int:
        return self.position + self.length

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)


def parse_header(buf: bytes | memoryview, pos: int = 0) -> BatchHeader:
    """The header at ``buf[pos:]``; the caller has checked that HEADER_SIZE bytes are there."""
    f = HEADER.unpack_from(buf, pos)
    return BatchHeader(pos, f[0], f[1] + LOG_OVERHEAD, *f[2:])


def offset_and_length(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """baseOffset and whole-batch length of the batch at ``pos`` (needs 12 bytes)."""
    base, length = _OFFSET_LENGTH.unpack_from(buf, pos)
    return base, length + LOG_OVERHEAD


def last_offset_delta(buf: bytes | memoryview, pos: int) -> int:
    return _I32.unpack_from(buf, pos + 23)[0]


def crc_ok(buf: bytes | memoryview, header: BatchHeader, start: int | None = None) -> bool:
    """Whether the CRC-32C the batch carries matches its bytes (``buf`` holds the whole batch)."""
    p = header.position if start is None else start
    return crc32c(memoryview(buf)[p + ATTRIBUTES_OFFSET : p + header.length]) == header.crc


def stamp(batch: bytearray, base_offset: int, leader_epoch: int) -> None:
    """Set the two fields a leader assigns; both lie outside the CRC, so it stays valid."""
    _I64.pack_into(batch, 0, base_offset)
    _I32.pack_into(batch, LEADER_EPOCH_OFFSET, leader_epoch)


#: where the max timestamp sits in a v2 batch, and the attributes' timestamp-type bit
MAX_TIMESTAMP_OFFSET = 35
LOG_APPEND_TIME_BIT = 0x08


def stamp_append_time(batch: bytes | bytearray | memoryview, length: int, now: int) -> bytearray:
    """A copy of the batch marked LogAppendTime with max timestamp ``now`` (what a leader of a
    LogAppendTime topic stores); both fields lie inside the CRC, so it is recomputed."""
    out = bytearray(memoryview(batch)[:length])
    attributes = _I16.unpack_from(out, ATTRIBUTES_OFFSET)[0] | LOG_APPEND_TIME_BIT
    _I16.pack_into(out, ATTRIBUTES_OFFSET, attributes)
    _I64.pack_into(out, MAX_TIMESTAMP_OFFSET, now)
    _U32.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return out
