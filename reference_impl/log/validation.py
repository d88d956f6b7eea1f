"""What a leader checks in a client's ``records`` before appending them (Kafka's LogValidator).

In the order Kafka checks, with the error codes Kafka answers:

- the field must hold exactly one complete v2 batch (Produce v3+); a length claiming more
  bytes than are there leaves no complete batch — INVALID_RECORD; a trailing partial batch
  after a complete one is dropped, as Kafka trims it;
- a length below the batch header, or a CRC-32C that does not match — CORRUPT_MESSAGE;
- larger than ``max.message.bytes`` — MESSAGE_TOO_LARGE;
- control batches from clients, a base offset other than 0, an offset range that does not
  match the record count, a producer id without a sequence — INVALID_RECORD;
- (a transactional batch is accepted here: the producer state checks its epoch and the
  replica manager that its partition is in the producer's transaction);
- ZSTD before Produce v7 — UNSUPPORTED_COMPRESSION_TYPE; an unknown codec or a payload that
  does not decompress — CORRUPT_MESSAGE;
- every record is walked: its length, varints, key/value/header lengths and offset delta
  (0, 1, 2 … in order) must be exactly right — INVALID_RECORD.

Nothing is re-encoded: the caller stores the bytes it was given.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.protocol import ErrorCode, KafkaError
from conformance.protocol.records import CorruptRecordError, decompress
from conformance.protocol.records.compression import Compression
from conformance.protocol.records.entries import MAGIC_OFFSET, MIN_ENTRY_SIZE
from conformance.protocol.records.header import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    BatchHeader,
    crc_ok,
    offset_and_length,
    parse_header,
)

MAX_DECOMPRESSED = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ValidBatch:
    header: BatchHeader
    data: bytes | memoryview


def validate_batch(
    records: bytes | None, *, max_message_bytes: int, produce_version: int = 11
) -> ValidBatch:
    """The one batch of a Produce partition, checked; raises KafkaError with Kafka's code."""
    if not records:
        raise KafkaError(
            ErrorCode.INVALID_RECORD, "a produce request must hold exactly one record batch"
        )
    data = memoryview(records)
    n = len(data)
    spans = []
    pos = 0
    while n - pos >= LOG_OVERHEAD:
        _, length = offset_and_length(data, pos)
        if length - LOG_OVERHEAD < MIN_ENTRY_SIZE:
            raise KafkaError(
                ErrorCode.CORRUPT_MESSAGE,
                f"record size {length - LOG_OVERHEAD} is below the minimum",
            )
        if pos + length > n:
            break
        spans.append((pos, length))
        pos += length
    if len(spans) != 1:
        raise KafkaError(
            ErrorCode.INVALID_RECORD,
            f"a produce request must hold exactly one record batch, found {len(spans)}",
        )
    _, length = spans[0]
    if data[MAGIC_OFFSET] != MAGIC:
        raise KafkaError(
            ErrorCode.INVALID_RECORD, f"record batches must be magic 2, not {data[MAGIC_OFFSET]}"
        )
    if length < HEADER_SIZE:
        raise KafkaError(
            ErrorCode.CORRUPT_MESSAGE,
            f"batch length {length - LOG_OVERHEAD} is below the v2 header size",
        )
    h = parse_header(data, 0)
    if length > max_message_bytes:
        raise KafkaError(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"the batch is {length} bytes, more than max.message.bytes {max_message_bytes}",
        )
    if not crc_ok(data, h):
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "the batch CRC-32C does not match its contents")
    batch = data[:length]
    _check_header(h, produce_version)
    _check_records(batch, h)
    return ValidBatch(h, batch)


def validate_internal_batch(records: bytes | None) -> ValidBatch:
    """A batch the broker itself writes (group coordinator): one v2 batch with a valid CRC."""
    if not records or len(records) < HEADER_SIZE:
        raise KafkaError(ErrorCode.INVALID_RECORD, "an internal append must hold one record batch")
    h = parse_header(records, 0)
    if h.magic != MAGIC or h.length != len(records) or not crc_ok(records, h):
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "an internal batch is not one valid v2 batch")
    return ValidBatch(h, records)


def _check_header(h: BatchHeader, produce_version: int) -> None:
    if h.is_control:
        raise KafkaError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
    if h.base_offset != 0:
        raise KafkaError(
            ErrorCode.INVALID_RECORD,
            f"the base offset of a produced batch must be 0, not {h.base_offset}",
        )
    if h.count <= 0:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"invalid record count {h.count}")
    if h.last_offset_delta + 1 != h.count:
        raise KafkaError(
            ErrorCode.INVALID_RECORD,
            f"offset range {h.last_offset_delta + 1} does not match the record count {h.count}",
        )
    if h.producer_id >= 0 and h.base_sequence < 0:
        raise KafkaError(
            ErrorCode.INVALID_RECORD, f"producer id {h.producer_id} without a sequence number"
        )
    codec = h.attributes & COMPRESSION_MASK
    if codec > 4:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"unknown compression codec {codec}")
    if codec == Compression.ZSTD and produce_version < 7:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, "ZSTD needs Produce v7 or later")


def _check_records(batch: memoryview, h: BatchHeader) -> None:
    codec = h.attributes & COMPRESSION_MASK
    if codec == Compression.NONE:
        whole = batch.obj
        if type(whole) is bytes and batch.nbytes == h.length:  # no copy: walk it in place
            walk_records(whole, h.count, HEADER_SIZE, h.length)
            return
        payload: bytes | memoryview = batch[HEADER_SIZE:]
    else:
        try:
            payload = decompress(
                Compression(codec), bytes(batch[HEADER_SIZE:]), max_size=MAX_DECOMPRESSED
            )
        except CorruptRecordError as e:
            raise KafkaError(
                ErrorCode.CORRUPT_MESSAGE, f"the compressed payload is corrupt: {e.reason}"
            ) from None
    walk_records(payload, h.count)


def walk_records(
    buf: bytes | memoryview, count: int, start: int = 0, stop: int | None = None
) -> None:
    """Check ``count`` records fill ``buf[start:stop]`` exactly, each well-formed, offset
    deltas 0..n-1.

    Hot path of every produce: varints of one and two bytes (nearly all of them) are decoded
    inline; longer ones go through ``_uvarint``.
    """
    if type(buf) is not bytes:
        buf = bytes(buf)  # indexing bytes is several times faster than a memoryview
    n = len(buf) if stop is None else stop
    pos = start
    i = -1
    try:
        for i in range(count):
            # record length: a zigzag varint, then the record's fields fill exactly that much
            b = buf[pos]
            if b < 0x80:
                u, pos = b, pos + 1
            elif buf[pos + 1] < 0x80:
                u, pos = (b & 0x7F) | (buf[pos + 1] << 7), pos + 2
            else:
                u, pos = _uvarint(buf, pos, n)
            length = (u >> 1) ^ -(u & 1)
            end = pos + length
            if length <= 0 or end > n:
                raise KafkaError(
                    ErrorCode.INVALID_RECORD, f"record {i} has an invalid length {length}"
                )
            # attributes, then the timestamp delta (varlong): skipped
            p = pos + 1
            while buf[p] >= 0x80:
                p += 1
            p += 1
            # offset delta
            b = buf[p]
            if b < 0x80:
                u, p = b, p + 1
            elif buf[p + 1] < 0x80:
                u, p = (b & 0x7F) | (buf[p + 1] << 7), p + 2
            else:
                u, p = _uvarint(buf, p, end)
            if (u >> 1) ^ -(u & 1) != i:
                raise KafkaError(
                    ErrorCode.INVALID_RECORD, f"record {i} has offset delta {(u >> 1) ^ -(u & 1)}"
                )
            # key, value: nullable varint-length bytes
            for _ in (0, 1):
                b = buf[p]
                if b < 0x80:
                    u, p = b, p + 1
                elif buf[p + 1] < 0x80:
                    u, p = (b & 0x7F) | (buf[p + 1] << 7), p + 2
                else:
                    u, p = _uvarint(buf, p, end)
                k = (u >> 1) ^ -(u & 1)
                if k > 0:
                    p += k
                elif k < -1:
                    raise KafkaError(
                        ErrorCode.INVALID_RECORD,
                        f"record {i} has a key or value of invalid length {k}",
                    )
            # headers
            b = buf[p]
            if b < 0x80:
                u, p = b, p + 1
            else:
                u, p = _uvarint(buf, p, end)
            headers = (u >> 1) ^ -(u & 1)
            if headers < 0:
                raise KafkaError(
                    ErrorCode.INVALID_RECORD, f"record {i} has a negative header count"
                )
            for _ in range(headers):
                u, p = _uvarint(buf, p, end)
                k = (u >> 1) ^ -(u & 1)
                if k < 0:
                    raise KafkaError(
                        ErrorCode.INVALID_RECORD,
                        f"record {i} has a header key of invalid length {k}",
                    )
                u, p = _uvarint(buf, p + k, end)
                k = (u >> 1) ^ -(u & 1)
                if k < -1:
                    raise KafkaError(
                        ErrorCode.INVALID_RECORD,
                        f"record {i} has a header value of invalid length {k}",
                    )
                p += max(k, 0)
            if p != end:
                raise KafkaError(
                    ErrorCode.INVALID_RECORD,
                    f"record {i} has length {length} but its fields take {p - pos} bytes",
                )
            pos = end
    except IndexError:
        raise KafkaError(
            ErrorCode.INVALID_RECORD, f"record {i} runs past the end of the batch"
        ) from None
    if pos != n:
        raise KafkaError(
            ErrorCode.INVALID_RECORD, f"{n - pos} bytes follow the {count} declared records"
        )
    if n > len(buf):
        raise KafkaError(ErrorCode.INVALID_RECORD, "the records run past the end of the batch")


def _uvarint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise KafkaError(ErrorCode.INVALID_RECORD, "a varint runs past the end of its record")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
