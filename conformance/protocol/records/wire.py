"""Bounds-checked reading and writing of the record formats' primitive types.

Every read checks the remaining length first, so a length field can never make the decoder
read past (or allocate beyond) the data it was given.
"""

from __future__ import annotations

import struct

from conformance.protocol.records.errors import CorruptRecordError

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class Reader:
    """A cursor over ``data[pos:end]``; errors name ``path`` and the absolute offset."""

    __slots__ = ("base", "data", "end", "path", "pos", "what")

    def __init__(
        self, data: bytes, pos: int = 0, end: int | None = None, *, base: int = 0, path: str = ""
    ) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end
        self.base = base  # added to offsets in error messages
        self.path = path
        self.what = "records"

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def fail(self, reason: str, at: int | None = None, field: str = "") -> CorruptRecordError:
        path = f"{self.path}.{field}" if field and self.path else field or self.path
        return CorruptRecordError(
            reason, offset=self.base + (self.pos if at is None else at), path=path, what=self.what
        )

    def _need(self, n: int, field: str) -> None:
        if n > self.end - self.pos:
            raise self.fail(
                f"{field or 'field'} needs {n} bytes but only {self.end - self.pos} remain",
                field=field,
            )

    def _fixed(self, fmt: struct.Struct, field: str) -> int:
        self._need(fmt.size, field)
        (v,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return v

    def int8(self, field: str = "") -> int:
        return self._fixed(_I8, field)

    def int16(self, field: str = "") -> int:
        return self._fixed(_I16, field)

    def int32(self, field: str = "") -> int:
        return self._fixed(_I32, field)

    def int64(self, field: str = "") -> int:
        return self._fixed(_I64, field)

    def raw(self, n: int, field: str = "") -> bytes:
        if n < 0:
            raise self.fail(f"negative length {n}", field=field)
        self._need(n, field)
        v = self.data[self.pos : self.pos + n]
        self.pos += n
        return bytes(v)

    def _uvarint(self, max_bytes: int, bits: int, field: str) -> int:
        data, pos, end = self.data, self.pos, self.end
        result = shift = 0
        for _ in range(max_bytes):
            if pos >= end:
                raise self.fail("varint runs past the end of the data", field=field)
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                if result >> bits:
                    raise self.fail(f"varint does not fit in {bits} bits", field=field)
                self.pos = pos
                return result
            shift += 7
        raise self.fail(f"varint longer than {max_bytes} bytes", field=field)

    def varint(self, field: str = "") -> int:
        """A zigzag-encoded signed 32-bit varint (Kafka's ``varint``)."""
        pos = self.pos
        if pos < self.end and self.data[pos] < 0x80:  # fast path: one byte (most lengths)
            self.pos = pos + 1
            u = self.data[pos]
            return (u >> 1) ^ -(u & 1)
        u = self._uvarint(5, 32, field)
        return (u >> 1) ^ -(u & 1)

    def varlong(self, field: str = "") -> int:
        """A zigzag-encoded signed 64-bit varint (Kafka's ``varlong``)."""
        u = self._uvarint(10, 64, field)
        return (u >> 1) ^ -(u & 1)


def write_uvarint(out: bytearray, u: int) -> None:
    """Append ``u`` (>= 0) as an unsigned varint (the compact lengths of flexible versions)."""
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)


def write_varint(out: bytearray, value: int) -> None:
    """Append ``value`` as a zigzag varint; ValueError when it does not fit in int32."""
    if not -(1 << 31) <= value < (1 << 31):
        raise ValueError(f"{value} does not fit in a varint (int32)")
    write_uvarint(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(out: bytearray, value: int) -> None:
    """Append ``value`` as a zigzag varlong; ValueError when it does not fit in int64."""
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"{value} does not fit in a varlong (int64)")
    write_uvarint(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def write_varint_bytes(out: bytearray, value: bytes | None) -> None:
    """Varint length then bytes; null is length -1."""
    if value is None:
        out.append(1)  # zigzag(-1)
        return
    write_varint(out, len(value))
    out += value
