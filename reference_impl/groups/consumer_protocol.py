"""The consumer's embedded protocol in a classic group's JoinGroup and SyncGroup (Kafka's
``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment``), as the coordinator reads and
writes it when classic members live in a KIP-848 consumer group (``migration.py``).

Subscription: int16 version, topics [int32 count] of string, user_data nullable bytes; v1+
owned_partitions [int32 count] of (topic string, partitions [int32 count] of int32); v2+
generation_id int32; v3+ rack_id nullable string. Assignment: int16 version, assigned
[int32 count] of (topic string, partitions), user_data nullable bytes. Non-flexible, big-endian;
a newer version is read by its known prefix, as Kafka does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field


class Malformed(ValueError):
    """The embedded protocol does not parse."""


@dataclass
class Subscription:
    version: int
    topics: list[str]
    #: topic name -> partitions the member says it owns (v1+; empty before)
    owned: dict[str, set[int]] = field(default_factory=dict)
    rack_id: str | None = None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def _unpack(self, fmt: str) -> int:
        try:
            (v,) = struct.unpack_from(fmt, self.data, self.at)
        except struct.error as e:
            raise Malformed(str(e)) from None
        self.at += struct.calcsize(fmt)
        return v

    def int16(self) -> int:
        return self._unpack(">h")

    def int32(self) -> int:
        return self._unpack(">i")

    def string(self) -> str | None:
        size = self.int16()
        if size < 0:
            return None
        raw = self.data[self.at : self.at + size]
        if len(raw) != size:
            raise Malformed("string past the end")
        self.at += size
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Malformed(str(e)) from None

    def skip_bytes(self) -> None:
        size = self.int32()
        if size > 0:
            self.at += size
        if self.at > len(self.data):
            raise Malformed("bytes past the end")

    def count(self) -> int:
        n = self.int32()
        if n < 0:
            raise Malformed("negative array length")
        return n

    def partitions(self) -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        for _ in range(self.count()):
            topic = self.string() or ""
            out.setdefault(topic, set()).update(self.int32() for _ in range(self.count()))
        return out

    @property
    def done(self) -> bool:
        return self.at >= len(self.data)


def version_of(data: bytes) -> int:
    """The version a member's metadata is written in (its assignment is answered in it)."""
    return max(_Reader(data).int16(), 0)


def decode_subscription(data: bytes) -> Subscription:
    r = _Reader(data)
    version = r.int16()
    if version < 0:
        raise Malformed(f"version {version}")
    topics = [r.string() or "" for _ in range(r.count())]
    r.skip_bytes()
    sub = Subscription(version, topics)
    if version >= 1 and not r.done:
        sub.owned = r.partitions()
    if version >= 2 and not r.done:
        r.int32()
    if version >= 3 and not r.done:
        sub.rack_id = r.string()
    return sub


def decode_assignment(data: bytes) -> dict[str, set[int]]:
    """A classic member's assignment (empty bytes: nothing assigned yet)."""
    if not data:
        return {}
    r = _Reader(data)
    r.int16()
    return r.partitions()


def encode_assignment(partitions: dict[str, set[int]], version: int) -> bytes:
    out = bytearray(struct.pack(">hi", version, len(partitions)))
    for topic in sorted(partitions):
        raw = topic.encode()
        ps = sorted(partitions[topic])
        out += struct.pack(">h", len(raw)) + raw + struct.pack(f">i{len(ps)}i", len(ps), *ps)
    out += struct.pack(">i", -1)
    return bytes(out)
