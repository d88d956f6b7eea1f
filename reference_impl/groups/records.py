"""What the coordinator writes to ``__consumer_offsets``: Kafka's own key/value layout.

Each record of a RecordBatch v2 on the internal topic is one of:

* an offset commit: key version 1 ``(group string, topic string, partition int32)``;
  value version 3 ``(offset int64, leader_epoch int32, metadata string, commit_timestamp int64)``
* a group's metadata: key version 2 ``(group string)``; value version 3
  ``(protocol_type string, generation int32, protocol nullable string, leader nullable string,
  current_state_timestamp int64, members [int32 count] of (member_id string,
  group_instance_id nullable string, client_id string, client_host string,
  rebalance_timeout int32, session_timeout int32, subscription bytes, assignment bytes))``

* a KIP-848 consumer group (``consumer.py``): key version 1000 ``(group string)``, the
  reference's own layout, not Kafka's six consumer-group record types: value version 0 then the
  group's whole state as UTF-8 JSON (epochs, members, their subscriptions, current and target
  assignments), rewritten at each change; Kafka's tooling skips a key version it does not know.
* a KIP-932 share group (``share.py``): key version 1001 ``(group string)``, value as the above.

A null value (tombstone) deletes the key: a committed offset, or the whole group.
Strings are int16 length + UTF-8 (-1 for null), bytes int32 length + data, all big-endian,
every key and value starting with its int16 version. This is the layout Kafka 2.3+ writes
(non-flexible versions), so the topic stays readable by Kafka's tooling; older value versions
(offset commit v0-v2, group v0-v2) are read too.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

from conformance.protocol.records.errors import CorruptRecordError
from conformance.protocol.records.wire import Reader
from reference_impl.groups.group_types import OffsetAndMetadata

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
#: the reference's own record of a KIP-848 consumer group (Kafka uses versions up to ~20)
CONSUMER_GROUP_KEY_VERSION = 1000
#: the reference's own record of a KIP-932 share group (``share.py``), laid out as the above
SHARE_GROUP_KEY_VERSION = 1001
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3


@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    group: str


@dataclass(frozen=True)
class ConsumerGroupKey:
    group: str


@dataclass(frozen=True)
class ShareGroupKey:
    group: str


@dataclass(frozen=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupRecord:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberRecord, ...] = ()


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def int16(self, v: int) -> _Writer:
        self.out += struct.pack(">h", v)
        return self

    def int32(self, v: int) -> _Writer:
        self.out += struct.pack(">i", v)
        return self

    def int64(self, v: int) -> _Writer:
        self.out += struct.pack(">q", v)
        return self

    def string(self, v: str | None) -> _Writer:
        if v is None:
            return self.int16(-1)
        data = v.encode()
        self.int16(len(data))
        self.out += data
        return self

    def bytes_(self, v: bytes) -> _Writer:
        self.int32(len(v))
        self.out += v
        return self


def _string(r: Reader, field: str) -> str:
    """A non-null string: a null (length -1) is as invalid here as any other negative length."""
    value = _nullable_string(r, field, nullable=False)
    assert value is not None
    return value


def _nullable_string(r: Reader, field: str, nullable: bool = True) -> str | None:
    n = r.int16(field)
    if n < 0:
        if nullable and n == -1:
            return None
        raise r.fail(f"invalid string length {n}", field=field)
    try:
        return r.raw(n, field).decode()
    except UnicodeDecodeError as e:
        raise r.fail(f"invalid UTF-8: {e}", field=field) from e


def _bytes(r: Reader, field: str) -> bytes:
    n = r.int32(field)
    if n < 0:
        raise r.fail(f"invalid bytes length {n}", field=field)
    return r.raw(n, field)


def _done(r: Reader, what: str) -> None:
    if r.remaining:
        raise r.fail(f"{r.remaining} trailing bytes after the {what}")


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return bytes(
        _Writer().int16(OFFSET_KEY_VERSION).string(group).string(topic).int32(partition).out
    )


def group_key(group: str) -> bytes:
    return bytes(_Writer().int16(GROUP_KEY_VERSION).string(group).out)


def offset_value(o: OffsetAndMetadata) -> bytes:
    w = _Writer().int16(OFFSET_VALUE_VERSION).int64(o.offset).int32(o.leader_epoch)
    return bytes(w.string(o.metadata).int64(o.commit_timestamp).out)


def group_value(g: GroupRecord) -> bytes:
    w = _Writer().int16(GROUP_VALUE_VERSION).string(g.protocol_type).int32(g.generation)
    w.string(g.protocol).string(g.leader).int64(g.current_state_timestamp).int32(len(g.members))
    for m in g.members:
        w.string(m.member_id).string(m.group_instance_id).string(m.client_id)
        w.string(m.client_host).int32(m.rebalance_timeout_ms).int32(m.session_timeout_ms)
        w.bytes_(m.subscription).bytes_(m.assignment)
    return bytes(w.out)


def consumer_group_key(group: str) -> bytes:
    return bytes(_Writer().int16(CONSUMER_GROUP_KEY_VERSION).string(group).out)


def consumer_group_value(state: dict) -> bytes:
    data = json.dumps(state, separators=(",", ":"), sort_keys=True).encode()
    return bytes(_Writer().int16(0).out) + data


def share_group_key(group: str) -> bytes:
    return bytes(_Writer().int16(SHARE_GROUP_KEY_VERSION).string(group).out)


#: a share group's state is JSON as a consumer group's (read back by decode_consumer_group_value)
share_group_value = consumer_group_value


def decode_consumer_group_value(data: bytes) -> dict:
    r = Reader(data, path="consumer_group_value")
    version = r.int16("version")
    if version != 0:
        raise r.fail(f"unknown consumer group value version {version}", at=0)
    try:
        state = json.loads(r.raw(r.remaining, "state").decode())
    except (UnicodeDecodeError, ValueError) as e:
        raise r.fail(f"invalid consumer group state: {e}", field="state") from e
    if not isinstance(state, dict):
        raise r.fail("invalid consumer group state", field="state")
    return state


def decode_key(data: bytes) -> OffsetKey | GroupKey | ConsumerGroupKey | ShareGroupKey:
    r = Reader(data, path="key")
    version = r.int16("version")
    key: OffsetKey | GroupKey | ConsumerGroupKey | ShareGroupKey
    if version in (0, 1):
        key = OffsetKey(_string(r, "group"), _string(r, "topic"), r.int32("partition"))
    elif version == 2:
        key = GroupKey(_string(r, "group"))
    elif version == CONSUMER_GROUP_KEY_VERSION:
        key = ConsumerGroupKey(_string(r, "group"))
    elif version == SHARE_GROUP_KEY_VERSION:
        key = ShareGroupKey(_string(r, "group"))
    else:
        raise CorruptRecordError(f"unknown __consumer_offsets key version {version}", path="key")
    _done(r, "key")
    return key


def decode_offset_value(data: bytes) -> OffsetAndMetadata:
    r = Reader(data, path="offset_value")
    version = r.int16("version")
    if not 0 <= version <= 3:
        raise r.fail(f"unknown offset commit value version {version}", at=0)
    offset = r.int64("offset")
    epoch = r.int32("leader_epoch") if version >= 3 else -1
    metadata = _string(r, "metadata")
    ts = r.int64("commit_timestamp")
    if version == 1:
        r.int64("expire_timestamp")
    _done(r, "offset commit value")
    return OffsetAndMetadata(offset, epoch, metadata or "", ts)


def decode_group_value(data: bytes) -> GroupRecord:
    r = Reader(data, path="group_value")
    version = r.int16("version")
    if not 0 <= version <= 3:
        raise r.fail(f"unknown group metadata value version {version}", at=0)
    protocol_type = _string(r, "protocol_type") or ""
    generation = r.int32("generation")
    protocol = _nullable_string(r, "protocol")
    leader = _nullable_string(r, "leader")
    ts = r.int64("current_state_timestamp") if version >= 2 else -1
    count = r.int32("members")
    if count < 0:
        raise r.fail(f"invalid member count {count}", field="members")
    members = []
    for _ in range(count):
        member_id = _string(r, "member_id") or ""
        instance = _nullable_string(r, "group_instance_id") if version >= 3 else None
        client_id = _string(r, "client_id") or ""
        client_host = _string(r, "client_host") or ""
        rebalance = r.int32("rebalance_timeout") if version >= 1 else -1
        session = r.int32("session_timeout")
        if version == 0:
            rebalance = session
        members.append(
            MemberRecord(
                member_id,
                instance,
                client_id,
                client_host,
                rebalance,
                session,
                _bytes(r, "subscription"),
                _bytes(r, "assignment"),
            )
        )
    _done(r, "group metadata value")
    return GroupRecord(protocol_type, generation, protocol, leader, ts, tuple(members))
