"""One record of a v2 batch (Kafka's ``DefaultRecord``), its headers, and the log-level view.

A record stores what the wire stores (offset and timestamp as deltas from the batch's base,
and the unused attributes byte), so decoding then encoding reproduces the bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from conformance.protocol.records.wire import (
    Reader,
    write_varint,
    write_varint_bytes,
    write_varlong,
)


class TimestampType(IntEnum):
    """Attribute bit 3 of a batch (or v1 message): who set the timestamps."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


@dataclass(frozen=True, slots=True)
class Header:
    """A record header: a string key (not null) and a nullable byte value."""

    key: str
    value: bytes | None = None


@dataclass(frozen=True, slots=True)
class Record:
    """A v2 record as on the wire (deltas relative to its batch)."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    attributes: int = 0  # int8, unused by Kafka so far; kept for exact round trips

    def __post_init__(self) -> None:
        if not isinstance(self.headers, tuple):
            object.__setattr__(self, "headers", tuple(self.headers))


@dataclass(frozen=True, slots=True)
class LogRecord:
    """A record as a consumer sees it: absolute offset and timestamp, any message format.

    ``timestamp`` and ``timestamp_type`` are None for magic 0 messages, which have none.
    """

    offset: int
    timestamp: int | None
    timestamp_type: TimestampType | None
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


def encode_record(out: bytearray, record: Record) -> None:
    """Append one record (varint length prefix, then its fields)."""
    body = bytearray()
    a = record.attributes
    if not -128 <= a <= 127:
        raise ValueError(f"record attributes {a} do not fit in an int8")
    body.append(a & 0xFF)
    write_varlong(body, record.timestamp_delta)
    write_varint(body, record.offset_delta)
    write_varint_bytes(body, record.key)
    write_varint_bytes(body, record.value)
    write_varint(body, len(record.headers))
    for h in record.headers:
        key = h.key.encode("utf-8")
        write_varint(body, len(key))
        body += key
        write_varint_bytes(body, h.value)
    write_varint(out, len(body))
    out += body


def _nullable_bytes(r: Reader, field: str) -> bytes | None:
    at = r.pos
    n = r.varint(field)
    if n == -1:
        return None
    if n < -1:
        raise r.fail(f"invalid length {n} (only -1 means null)", at=at, field=field)
    if n > r.remaining:
        raise r.fail(f"length {n} exceeds the {r.remaining} bytes left", at=at, field=field)
    return r.raw(n, field)


def decode_record(r: Reader) -> Record:
    """Read one record at the reader's position; its length must match its fields exactly."""
    start = r.pos
    length = r.varint("length")
    if length < 0 or length > r.remaining:
        raise r.fail(
            f"record length {length} is invalid ({r.remaining} bytes left)",
            at=start,
            field="length",
        )
    body_start = r.pos
    end = body_start + length
    outer_end, r.end = r.end, end
    try:
        attributes = r.int8("attributes")
        timestamp_delta = r.varlong("timestampDelta")
        offset_delta = r.varint("offsetDelta")
        key = _nullable_bytes(r, "key")
        value = _nullable_bytes(r, "value")
        at = r.pos
        count = r.varint("headers")
        if count < 0:
            raise r.fail(f"negative header count {count}", at=at, field="headers")
        headers = []
        for i in range(count):
            field = f"headers[{i}]"
            at = r.pos
            n = r.varint(field + ".key")
            if n < 0 or n > r.remaining:
                raise r.fail(
                    f"header key length {n} is invalid ({r.remaining} bytes left)",
                    at=at,
                    field=field + ".key",
                )
            raw_key = r.raw(n, field + ".key")
            try:
                hkey = raw_key.decode("utf-8")
            except UnicodeDecodeError as e:
                raise r.fail(f"header key is not UTF-8: {e}", at=at, field=field + ".key") from e
            headers.append(Header(hkey, _nullable_bytes(r, field + ".value")))
        if r.pos != end:
            raise r.fail(
                f"record length {length} but its fields take {r.pos - body_start} bytes",
                at=start,
                field="length",
            )
    finally:
        r.end = outer_end
    return Record(offset_delta, timestamp_delta, key, value, tuple(headers), attributes)
