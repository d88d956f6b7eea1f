"""The v2 record-batch header: its layout, and reading it out of stored bytes without decoding
any record.

The one place the header's byte layout is written down: ``batch.py`` encodes and decodes whole
batches with it, and the reference's log (append as follower, read, recovery), its produce
validation and its authorizer read only the header (offsets, length, timestamps, producer
fields, leader epoch, attributes) and the CRC-32C over the bytes after the CRC field.

Layout: baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8 (2),
crc uint32 (CRC-32C of everything after it), attributes int16, lastOffsetDelta int32,
baseTimestamp int64, maxTimestamp int64, producerId int64, producerEpoch int16,
baseSequence int32, then the record count int32 and the records.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from crc32c import crc32c

from conformance.protocol.records.entries import LOG_OVERHEAD, MAGIC_OFFSET

MAGIC = 2
NO_PRODUCER_ID = -1

#: baseOffset, batchLength, partitionLeaderEpoch, magic
HEAD = struct.Struct(">qiib")
CRC = struct.Struct(">I")
#: attributes (as unsigned bits) .. records count: the bytes the CRC covers, up to the records
AFTER_CRC = struct.Struct(">Hiqqqhii")
#: the whole header, field by field
HEADER = struct.Struct(">" + HEAD.format[1:] + CRC.format[1:] + AFTER_CRC.format[1:])
HEADER_SIZE = HEADER.size  # 61
LEADER_EPOCH_OFFSET = 12
CRC_OFFSET = HEAD.size  # 17
ATTRIBUTES_OFFSET = CRC_OFFSET + CRC.size  # 21: the CRC covers from here to the end
LAST_OFFSET_DELTA_OFFSET = ATTRIBUTES_OFFSET + 2  # 23
MAX_TIMESTAMP_OFFSET = LAST_OFFSET_DELTA_OFFSET + 4 + 8  # 35
RECORDS_COUNT_OFFSET = HEADER_SIZE - 4  # 57

# the attributes' bits
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08  # set: LogAppendTime
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40
KNOWN_BITS = 0x7F

_OFFSET_LENGTH = struct.Struct(">qi")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U16 = struct.Struct(">H")

assert MAGIC_OFFSET == HEAD.size - 1 and HEAD.format[-1] == "b"


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
    """baseOffset and whole-batch length of the batch at ``pos`` (needs LOG_OVERHEAD bytes)."""
    base, length = _OFFSET_LENGTH.unpack_from(buf, pos)
    return base, length + LOG_OVERHEAD


def last_offset_delta(buf: bytes | memoryview, pos: int) -> int:
    return _I32.unpack_from(buf, pos + LAST_OFFSET_DELTA_OFFSET)[0]


def attributes_at(buf: bytes | bytearray | memoryview, pos: int) -> int:
    """The attributes of the v2 batch at ``pos`` (needs ATTRIBUTES_OFFSET + 2 bytes)."""
    return _U16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)[0]


def crc_ok(buf: bytes | memoryview, header: BatchHeader, start: int | None = None) -> bool:
    """Whether the CRC-32C the batch carries matches its bytes (``buf`` holds the whole batch)."""
    p = header.position if start is None else start
    return crc32c(memoryview(buf)[p + ATTRIBUTES_OFFSET : p + header.length]) == header.crc


def stamp(batch: bytearray, base_offset: int, leader_epoch: int) -> None:
    """Set the two fields a leader assigns; both lie outside the CRC, so it stays valid."""
    _I64.pack_into(batch, 0, base_offset)
    _I32.pack_into(batch, LEADER_EPOCH_OFFSET, leader_epoch)


def stamp_append_time(batch: bytes | bytearray | memoryview, length: int, now: int) -> bytearray:
    """A copy of the batch marked LogAppendTime with max timestamp ``now`` (what a leader of a
    LogAppendTime topic stores); both fields lie inside the CRC, so it is recomputed."""
    out = bytearray(memoryview(batch)[:length])
    _U16.pack_into(out, ATTRIBUTES_OFFSET, attributes_at(out, 0) | TIMESTAMP_TYPE_BIT)
    _I64.pack_into(out, MAX_TIMESTAMP_OFFSET, now)
    CRC.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return out
