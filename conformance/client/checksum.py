"""The per-record checksum KIP-42 puts on RecordMetadata and ConsumerRecord.

KIP-42 was written for message format v0/v1, where every message carried its own CRC-32 and the
checksum was that CRC. Record batch v2 (Kafka 0.11) has one CRC-32C per batch and none per
record, so released Kafka deprecated the accessor (KIP-98 era) and, for v2 records, returned
:func:`kafka_partial_checksum`: a CRC-32C over the timestamp and the two sizes only, which does
not cover the key, value or headers, and was removed in Kafka 3.0.

The suite's client gives instead :func:`record_checksum`, the reading recorded in
``specs/requirements/kip-42.json``: CRC-32C (the v2 batch polynomial) over the bytes that encode the
record's content in a v2 record, i.e. the tail of Kafka's ``DefaultRecord`` after its
attributes, timestamp delta and offset delta:

    varint keyLength (-1 for null) . key . varint valueLength (-1 for null) . value .
    varint headerCount . for each header: varint keyLength . key (UTF-8) .
                                          varint valueLength (-1 for null) . value

It leaves out where the record sits (offset, batch) and when (timestamp, which a broker using
log-append time rewrites), so the producer computes it when the record is acknowledged and the
consumer when it is fetched, and the two agree exactly when the content arrived unchanged. The
batch's own CRC-32C is verified on fetch as well (by the record-batch decoder).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from crc32c import crc32c

from conformance.protocol.records import Header
from conformance.protocol.records.wire import write_varint, write_varint_bytes

_TIMESTAMP_AND_SIZES = struct.Struct(">qii")


def record_content(key: bytes | None, value: bytes | None, headers: Iterable[Header]) -> bytes:
    """The v2 encoding of a record's key, value and headers (see the module docstring)."""
    out = bytearray()
    write_varint_bytes(out, key)
    write_varint_bytes(out, value)
    hs = list(headers)
    write_varint(out, len(hs))
    for h in hs:
        write_varint_bytes(out, h.key.encode("utf-8"))
        write_varint_bytes(out, h.value)
    return bytes(out)


def record_checksum(key: bytes | None, value: bytes | None, headers: Iterable[Header] = ()) -> int:
    """CRC-32C of :func:`record_content`, an unsigned 32-bit value."""
    return crc32c(record_content(key, value, headers))


def kafka_partial_checksum(timestamp: int, key_size: int, value_size: int) -> int:
    """What Kafka 0.11-2.8 reported as the checksum of a v2 record (``computePartialChecksum``).

    CRC-32C over the timestamp (int64), serialised key size and value size (int32, -1 for
    null), big-endian. Kept for comparison with those clients; it does not cover the content.
    """
    return crc32c(_TIMESTAMP_AND_SIZES.pack(timestamp, key_size, value_size))


def serialized_size(data: bytes | None) -> int:
    """A serialised key or value's size as KIP-42 reports it: -1 for null."""
    return -1 if data is None else len(data)
