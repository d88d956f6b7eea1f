"""The principal and client address an Envelope carries (KIP-590), in Kafka's byte forms.

RequestPrincipal is what Kafka's DefaultKafkaPrincipalBuilder serialises: the version (int16,
0) followed by DefaultPrincipalData v0, a flexible struct of Type (compact string), Name
(compact string), TokenAuthenticated (bool) and an empty tagged-field section.
ClientHostAddress is the client's IP address as raw bytes (4 for IPv4, 16 for IPv6).
"""

from __future__ import annotations

import ipaddress
import struct


class PrincipalError(ValueError):
    """Bytes that are not a serialised principal (PRINCIPAL_DESERIALIZATION_FAILURE)."""


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_uvarint(raw: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(raw) or shift > 28:
            raise PrincipalError("truncated or overlong varint")
        byte = raw[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _compact_string(s: str) -> bytes:
    data = s.encode("utf-8")
    return _uvarint(len(data) + 1) + data


def serialize(principal: str, token_authenticated: bool = False) -> bytes:
    kind, _, name = principal.partition(":")
    return (
        struct.pack(">h", 0)
        + _compact_string(kind)
        + _compact_string(name)
        + (b"\x01" if token_authenticated else b"\x00")
        + b"\x00"
    )


def deserialize(raw: bytes) -> str:
    """``Type:Name`` from the serialised form."""
    if len(raw) < 2 or struct.unpack_from(">h", raw)[0] != 0:
        raise PrincipalError("unknown principal data version")
    pos = 2
    parts = []
    for _ in range(2):
        n, pos = _read_uvarint(raw, pos)
        if n == 0 or pos + n - 1 > len(raw):
            raise PrincipalError("bad compact string")
        try:
            parts.append(raw[pos : pos + n - 1].decode("utf-8"))
        except UnicodeDecodeError:
            raise PrincipalError("principal is not UTF-8") from None
        pos += n - 1
    if pos >= len(raw):
        raise PrincipalError("truncated principal")
    return f"{parts[0]}:{parts[1]}"


def address_bytes(client_address: str) -> bytes:
    """Raw IP bytes of the listener's ``host:port`` form of a peer."""
    host = client_address.rsplit(":", 1)[0].strip("[]")
    try:
        return ipaddress.ip_address(host).packed
    except ValueError:
        return ipaddress.ip_address("127.0.0.1").packed


def address_text(raw: bytes) -> str:
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        return "unknown"
