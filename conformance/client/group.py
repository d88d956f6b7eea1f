"""Classic consumer-group membership: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

The member joins with protocol type ``consumer`` and the ``range`` assignor; when the
coordinator makes it the leader it assigns every subscribed topic's partitions in ranges over
the members sorted by id (Kafka's ``RangeAssignor``) and hands the plan over in SyncGroup. The
subscription and assignment travel in Kafka's ``ConsumerProtocol`` v0 layout. A background
heartbeat notices a rebalance (or a lost membership) and marks the member for rejoining; the
consumer rejoins on its next poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import time
from collections.abc import Iterable, Mapping

from conformance.client import errors
from conformance.client.coordinator import GroupCoordinator
from conformance.client.record_types import TopicPartition
from conformance.protocol import ApiKey, ErrorCode

log = logging.getLogger(__name__)

PROTOCOL_TYPE = "consumer"
RANGE = "range"
#: codes that end this generation's membership: rejoin
REJOIN = frozenset(
    {ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.REBALANCE_IN_PROGRESS}
)

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


# --- ConsumerProtocol v0 ------------------------------------------------------------------------


def _string(s: str) -> bytes:
    b = s.encode()
    return _I16.pack(len(b)) + b


def encode_subscription(topics: Iterable[str]) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, user data (null)."""
    ts = sorted(set(topics))
    return _I16.pack(0) + _I32.pack(len(ts)) + b"".join(_string(t) for t in ts) + _I32.pack(-1)


def encode_assignment(assignment: Mapping[str, Iterable[int]]) -> bytes:
    """ConsumerProtocolAssignment v0: version, (topic, partitions) pairs, user data (null)."""
    out = bytearray(_I16.pack(0) + _I32.pack(len(assignment)))
    for topic, parts in sorted(assignment.items()):
        ps = sorted(parts)
        out += _string(topic) + _I32.pack(len(ps)) + b"".join(_I32.pack(p) for p in ps)
    return bytes(out + _I32.pack(-1))


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def unpack(self, s: struct.Struct) -> int:
        (v,) = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return v

    def string(self) -> str:
        n = self.unpack(_I16)
        self.pos += n
        return self.data[self.pos - n : self.pos].decode()


def decode_subscription(data: bytes) -> list[str]:
    """The topics of a subscription of any version (later versions only append fields)."""
    c = _Cursor(data)
    c.unpack(_I16)
    return [c.string() for _ in range(c.unpack(_I32))]


def decode_assignment(data: bytes | None) -> list[TopicPartition]:
    if not data:
        return []
    c = _Cursor(data)
    c.unpack(_I16)
    out = []
    for _ in range(c.unpack(_I32)):
        topic = c.string()
        out += [TopicPartition(topic, c.unpack(_I32)) for _ in range(c.unpack(_I32))]
    return out


def range_assign(
    subscriptions: Mapping[str, Iterable[str]], partitions: Mapping[str, int]
) -> dict[str, dict[str, list[int]]]:
    """Kafka's RangeAssignor: per topic, consecutive ranges over its members sorted by id, the
    first ``partitions % members`` members getting one more."""
    plan: dict[str, dict[str, list[int]]] = {m: {} for m in subscriptions}
    for topic, n in sorted(partitions.items()):
        members = sorted(m for m, ts in subscriptions.items() if topic in set(ts))
        if not members:
            continue
        per, extra = divmod(n, len(members))
        start = 0
        for i, m in enumerate(members):
            size = per + (1 if i < extra else 0)
            if size:
                plan[m][topic] = list(range(start, start + size))
            start += size
    return plan


# --- membership ---------------------------------------------------------------------------------


class GroupMembership:
    """One member of a classic consumer group."""

    def __init__(
        self,
        coordinator: GroupCoordinator,
        topics: Iterable[str],
        *,
        session_timeout: float = 10.0,
        rebalance_timeout: float = 30.0,
        heartbeat_interval: float = 1.0,
    ) -> None:
        self.coordinator = coordinator
        self.cluster = coordinator.cluster
        self.topics = sorted(set(topics))
        self.session_timeout = session_timeout
        self.rebalance_timeout = rebalance_timeout
        self.heartbeat_interval = heartbeat_interval
        self.member_id = ""
        self.generation = -1
        self.leader = False
        self.needs_join = True
        self.assignment: list[TopicPartition] = []
        self._heartbeat: asyncio.Task | None = None

    async def join(self, timeout: float) -> list[TopicPartition]:
        """Join (or rejoin) the group; the partitions this member is assigned."""
        self._stop_heartbeat()
        deadline = time.monotonic() + timeout
        while True:
            if time.monotonic() > deadline:
                raise errors.ClientError(
                    f"could not join group {self.coordinator.group_id!r} in {timeout:.0f} s"
                )
            body = await self._send(ApiKey.JOIN_GROUP, self._join_request, deadline)
            code = body["ErrorCode"]
            if code == ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id = body["MemberId"]
                continue
            if code in REJOIN or errors.is_retriable(code):
                await self._backoff(code)
                continue
            errors.raise_for(code, context="JoinGroup")
            self.member_id, self.generation = body["MemberId"], body["GenerationId"]
            self.leader = body["Leader"] == self.member_id
            plan = await self._plan(body["Members"]) if self.leader else []
            body = await self._send(
                ApiKey.SYNC_GROUP, lambda v, plan=plan: self._sync_request(plan), deadline
            )
            code = body["ErrorCode"]
            if code in REJOIN or errors.is_retriable(code):
                await self._backoff(code)
                continue
            errors.raise_for(code, context="SyncGroup")
            self.assignment = decode_assignment(body["Assignment"])
            self.needs_join = False
            self._heartbeat = asyncio.get_running_loop().create_task(self._heartbeats())
            log.info(
                "joined %s generation %d as %s: %s",
                self.coordinator.group_id,
                self.generation,
                self.member_id,
                self.assignment,
            )
            return self.assignment

    async def _send(self, api_key: int, build, deadline: float) -> dict:
        return await self.coordinator.call(
            api_key,
            build,
            lambda v, body: body,
            max(deadline - time.monotonic(), 1.0),
            request_timeout=self.rebalance_timeout + self.cluster.request_timeout,
        )

    async def _backoff(self, code: int) -> None:
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
        if code in errors.STALE_COORDINATOR:
            self.coordinator.node = None
        await asyncio.sleep(self.cluster.retry_backoff)

    def _join_request(self, version: int) -> dict:
        return {
            "GroupId": self.coordinator.group_id,
            "SessionTimeoutMs": int(self.session_timeout * 1000),
            "RebalanceTimeoutMs": int(self.rebalance_timeout * 1000),
            "MemberId": self.member_id,
            "GroupInstanceId": None,
            "ProtocolType": PROTOCOL_TYPE,
            "Protocols": [{"Name": RANGE, "Metadata": encode_subscription(self.topics)}],
            "Reason": None,
        }

    async def _plan(self, members: list[dict]) -> list[dict]:
        subscriptions = {m["MemberId"]: decode_subscription(m["Metadata"]) for m in members}
        topics = sorted({t for ts in subscriptions.values() for t in ts})
        await self.cluster.refresh(topics)
        counts = {t: len(self.cluster.partitions(t)) for t in topics}
        plan = range_assign(subscriptions, counts)
        return [{"MemberId": m, "Assignment": encode_assignment(a)} for m, a in plan.items()]

    def _sync_request(self, plan: list[dict]) -> dict:
        return {
            "GroupId": self.coordinator.group_id,
            "GenerationId": self.generation,
            "MemberId": self.member_id,
            "GroupInstanceId": None,
            "ProtocolType": PROTOCOL_TYPE,
            "ProtocolName": RANGE,
            "Assignments": plan,
        }

    async def _heartbeats(self) -> None:
        while not self.needs_join:
            await asyncio.sleep(self.heartbeat_interval)
            try:
                _, body = await self.cluster.request(
                    await self.coordinator.find(self.session_timeout),
                    ApiKey.HEARTBEAT,
                    lambda v: {
                        "GroupId": self.coordinator.group_id,
                        "GenerationId": self.generation,
                        "MemberId": self.member_id,
                        "GroupInstanceId": None,
                    },
                )
            except (ConnectionError, TimeoutError, *errors.FAILURES) as e:
                log.info("heartbeat failed: %s", e)
                self.coordinator.node = None
                continue
            code = body["ErrorCode"]
            if code in errors.STALE_COORDINATOR:
                self.coordinator.node = None
            elif code != ErrorCode.NONE:
                if code == ErrorCode.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                log.info("heartbeat: %s; rejoining", errors.error_name(code))
                self.needs_join = True

    def _stop_heartbeat(self) -> None:
        task, self._heartbeat = self._heartbeat, None
        if task is not None:
            task.cancel()

    async def leave(self) -> None:
        """Stop heartbeating and leave the group (so the others rebalance at once)."""
        self._stop_heartbeat()
        if not self.member_id:
            return
        member_id, self.member_id, self.needs_join = self.member_id, "", True
        with contextlib.suppress(ConnectionError, TimeoutError, *errors.FAILURES):
            await self.coordinator.call(
                ApiKey.LEAVE_GROUP,
                lambda v: {
                    "GroupId": self.coordinator.group_id,
                    "MemberId": member_id,
                    "Members": [{"MemberId": member_id, "GroupInstanceId": None, "Reason": None}],
                },
                lambda v, body: body,
                self.cluster.request_timeout,
            )
