"""Legacy message sets (magic 0 and 1), the record format before Kafka 0.11.

Each entry is ``offset int64, size int32`` then a message: crc uint32 (CRC-32 of the rest of
the message), magic int8, attributes int8 (codec bits 0-2, timestamp type bit 3 in magic 1),
timestamp int64 (magic 1 only), key and value as int32-length nullable bytes. A compressed
message is a wrapper whose value is a whole compressed message set (one level deep only): in
magic 1 the inner offsets are relative and the wrapper's offset is that of the last inner one.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from conformance.protocol.errors import EncodeError
from conformance.protocol.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Compression,
    codec,
    compress,
    decompress,
)
from conformance.protocol.records.entries import (
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    complete_entries,
    scan_entries,
)
from conformance.protocol.records.errors import CorruptRecordError
from conformance.protocol.records.record import LogRecord, TimestampType
from conformance.protocol.records.wire import Reader

NO_TIMESTAMP = -1
TIMESTAMP_TYPE_BIT = 0x08
_KNOWN_BITS = 0x0F
#: Smallest message size (crc .. value length) per magic.
MIN_MESSAGE_SIZE = {0: 14, 1: 22}

_ENTRY = struct.Struct(">qiI")  # offset, size, crc


@dataclass(frozen=True)
class LegacyMessage:
    """A magic 0 or 1 message; a compressed one holds its decompressed ``inner`` messages.

    Fields hold wire values: inner offsets of a magic 1 wrapper stay relative (see
    ``log_records`` for absolute ones). A wrapper's ``value`` is None: its wire value is the
    compressed encoding of ``inner``. ``timestamp`` is None exactly when ``magic`` is 0.
    ``raw`` is the exact bytes a decoded message came from (None when built in memory).
    """

    offset: int
    key: bytes | None = None
    value: bytes | None = None
    magic: int = 1
    timestamp: int | None = None
    compression: Compression = Compression.NONE
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    inner: tuple[LegacyMessage, ...] = ()
    unused_attribute_bits: int = 0
    raw: bytes | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if self.magic not in (0, 1):
            raise ValueError(f"legacy messages have magic 0 or 1, not {self.magic}")
        if self.magic == 1 and self.timestamp is None:
            set_(self, "timestamp", NO_TIMESTAMP)
        if self.magic == 0 and self.timestamp is not None:
            raise ValueError("magic 0 messages have no timestamp")
        set_(self, "compression", Compression(self.compression))
        set_(self, "timestamp_type", TimestampType(self.timestamp_type))
        if not isinstance(self.inner, tuple):
            set_(self, "inner", tuple(self.inner))
        if self.compression == Compression.NONE and self.inner:
            raise ValueError("only a compressed (wrapper) message has inner messages")
        if self.compression != Compression.NONE and self.value is not None:
            raise ValueError("a wrapper message's value is its compressed inner messages")
        if self.unused_attribute_bits & ~0xF0:
            raise ValueError("unused_attribute_bits must be within bits 4-7")

    @property
    def attributes(self) -> int:
        return (
            int(self.compression)
            | (TIMESTAMP_TYPE_BIT if self.timestamp_type == TimestampType.LOG_APPEND_TIME else 0)
            | self.unused_attribute_bits
        )

    @property
    def crc(self) -> int:
        """The CRC-32 the message carries (from ``raw`` when decoded, else as encoded)."""
        data = self.raw if self.raw is not None else encode_message(self)
        return _ENTRY.unpack_from(data)[2]

    def log_records(self) -> list[LogRecord]:
        """Absolute offsets and timestamps, as the Java consumer derives them."""
        ts_type = self.timestamp_type if self.magic == 1 else None
        if self.compression == Compression.NONE:
            return [LogRecord(self.offset, self.timestamp, ts_type, self.key, self.value)]
        # magic 1 inner offsets are relative to a base derived from the wrapper's offset; as in
        # the Java reader, a negative base (a producer's unassigned offsets) leaves them as-is
        base = self.offset - self.inner[-1].offset if self.magic == 1 and self.inner else -1
        shift = max(base, 0)
        append_time = self.magic == 1 and self.timestamp_type == TimestampType.LOG_APPEND_TIME
        return [
            LogRecord(
                offset=m.offset + shift,
                timestamp=self.timestamp if append_time else m.timestamp,
                timestamp_type=ts_type,
                key=m.key,
                value=m.value,
            )
            for m in self.inner
        ]


def wrap_messages(
    inner: Sequence[LegacyMessage],
    compression: Compression,
    *,
    offset: int | None = None,
    timestamp: int | None = None,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
) -> LegacyMessage:
    """A compressed wrapper around ``inner`` as the Java producer writes it.

    The offset defaults to the last inner offset; a magic 1 timestamp to the largest inner one.
    """
    if not inner:
        raise ValueError("a wrapper needs at least one inner message")
    magic = inner[0].magic
    if magic == 1 and timestamp is None:
        timestamp = max(m.timestamp for m in inner if m.timestamp is not None)
    return LegacyMessage(
        offset=inner[-1].offset if offset is None else offset,
        magic=magic,
        timestamp=timestamp,
        compression=compression,
        timestamp_type=timestamp_type,
        inner=tuple(inner),
    )


# -- encoding -----------------------------------------------------------------------------------


def _bytes32(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
    else:
        out += struct.pack(">i", len(value))
        out += value


def encode_message(message: LegacyMessage) -> bytes:
    """One message-set entry (offset, size, message)."""
    value = message.value
    if message.compression != Compression.NONE:
        value = compress(
            message.compression, encode_message_set(message.inner), magic=message.magic
        )
    body = bytearray()
    try:
        body += struct.pack(">bB", message.magic, message.attributes)
        if message.magic == 1:
            body += struct.pack(">q", message.timestamp)
        _bytes32(body, message.key)
        _bytes32(body, value)
        return _ENTRY.pack(message.offset, 4 + len(body), zlib.crc32(body)) + body
    except (struct.error, TypeError) as e:
        raise EncodeError("MessageSet", "", str(e)) from e


def encode_message_set(messages: Sequence[LegacyMessage]) -> bytes:
    """Messages back to back."""
    return b"".join(encode_message(m) for m in messages)


# -- decoding -----------------------------------------------------------------------------------


def _nullable32(r: Reader, field: str) -> bytes | None:
    at = r.pos
    n = r.int32(field)
    if n == -1:
        return None
    if n < -1 or n > r.remaining:
        raise r.fail(f"length {n} is invalid ({r.remaining} bytes left)", at=at, field=field)
    return r.raw(n, field)


def decode_message_at(
    data: bytes,
    start: int,
    end: int,
    *,
    path: str = "message[0]",
    base: int = 0,
    nested: bool = False,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> LegacyMessage:
    """Decode the entry occupying exactly ``data[start:end]``; offsets in errors get ``base``."""
    r = Reader(data, start, end, base=base, path=path)
    r.what = "MessageSet"
    offset = r.int64("offset")
    r.int32("size")
    (stored_crc,) = struct.unpack_from(">I", data, r.pos)
    computed = zlib.crc32(memoryview(data)[start + MAGIC_OFFSET : end])
    if computed != stored_crc:
        raise r.fail(
            f"CRC mismatch: expected 0x{stored_crc:08x} (stored), computed 0x{computed:08x}",
            field="crc",
        )
    r.pos += 4
    magic = r.int8("magic")
    if magic not in MIN_MESSAGE_SIZE:
        raise r.fail(f"magic {magic} is not a legacy message", at=r.pos - 1, field="magic")
    size = end - start - LOG_OVERHEAD
    if size < MIN_MESSAGE_SIZE[magic]:
        raise r.fail(
            f"message size {size} is less than the minimum {MIN_MESSAGE_SIZE[magic]} "
            f"for magic {magic}",
            at=start + 8,
            field="size",
        )
    attrs = r.int8("attributes") & 0xFF
    compression = codec(attrs, offset=base + r.pos - 1, path=path + ".attributes")
    timestamp = r.int64("timestamp") if magic == 1 else None
    key = _nullable32(r, "key")
    value_at = r.pos
    value = _nullable32(r, "value")
    if r.remaining:
        raise r.fail(f"{r.remaining} bytes left after the value", field="size")
    inner: tuple[LegacyMessage, ...] = ()
    if compression != Compression.NONE:
        if nested:
            raise r.fail("compressed message inside a compressed message", field="attributes")
        if value is None:
            raise r.fail("compressed message has a null value", at=value_at, field="value")
        try:
            plain = decompress(compression, value, magic=magic, max_size=max_decompressed_size)
        except CorruptRecordError as e:
            raise r.fail(e.reason, at=value_at, field="value") from e
        inner = _decode_inner(plain, magic, path + ".inner")
        value = None
    message = LegacyMessage(
        offset=offset,
        key=key,
        value=value,
        magic=magic,
        timestamp=timestamp,
        compression=compression,
        timestamp_type=TimestampType((attrs & TIMESTAMP_TYPE_BIT) >> 3),
        inner=inner,
        unused_attribute_bits=attrs & ~_KNOWN_BITS,
    )
    object.__setattr__(message, "raw", bytes(data[start:end]))
    return message


def _decode_inner(plain: bytes, magic: int, path: str) -> tuple[LegacyMessage, ...]:
    try:
        spans, tail = scan_entries(plain)
    except CorruptRecordError as e:
        raise CorruptRecordError(e.reason, offset=e.offset, path=f"{path}(decompressed)") from e
    if tail != len(plain):
        raise CorruptRecordError(
            f"compressed message set ends inside a message ({len(plain) - tail} bytes)",
            offset=tail,
            path=f"{path}(decompressed)",
        )
    if not spans:
        raise CorruptRecordError("compressed message holds no messages", path=path)
    messages = []
    for i, (s, stop, m) in enumerate(spans):
        if m != magic:
            raise CorruptRecordError(
                f"inner message magic {m} differs from its wrapper's {magic}",
                offset=s + MAGIC_OFFSET,
                path=f"{path}[{i}](decompressed)",
            )
        messages.append(decode_message_at(plain, s, stop, path=f"{path}[{i}]", nested=True))
    return tuple(messages)


def decode_message_set(
    data: bytes,
    *,
    allow_partial: bool = False,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> list[LegacyMessage]:
    """Every message of a magic 0/1 message set (see ``decode_batches`` for ``allow_partial``)."""
    data = bytes(data)
    spans = complete_entries(data, allow_partial=allow_partial, noun="message")
    return [
        decode_message_at(
            data, s, e, path=f"message[{i}]", max_decompressed_size=max_decompressed_size
        )
        for i, (s, e, _m) in enumerate(spans)
    ]
