"""What several KIP-590 test modules use: Kafka's serialised principal, as an Envelope
carries it."""

from __future__ import annotations

import struct


def principal(name: str) -> bytes:
    """Kafka's serialised principal: version 0 (int16), then DefaultPrincipalData v0: type and
    name as compact strings, TokenAuthenticated false, no tagged fields."""
    kind, _, who = name.partition(":")
    out = struct.pack(">h", 0)
    for text in (kind, who):
        data = text.encode()
        out += bytes([len(data) + 1]) + data  # lengths below 127 fit one varint byte
    return out + b"\x00\x00"
