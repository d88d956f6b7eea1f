"""KIP-932 share groups as the suite drives them: members that heartbeat with
ShareGroupHeartbeat on their own connection to the group's coordinator, ShareGroupDescribe,
share sessions of ShareFetch and ShareAcknowledge on the partition's leader, and the group's
configs. Nothing here judges the answers: the tests do, naming their requirements."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from conformance.protocol import ApiKey, ConfigOperation, ConfigResourceType, ErrorCode
from conformance.suite.consumer_groups.shared import HeartbeatGroup, newest, topic_ids
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.provision import obtain
from conformance.suite.kit.records_io import leader

#: KIP-932's versions before 1 were Kafka 4.0's early access (not served by default): judged
#: from version 1, as Apache Kafka 4.1 and later serve them
SERVED = "1+"
#: how long a share partition may take to be assigned (Kafka 4.4.0: 1-3 s on a fresh cluster)
SETTLE = 8.0
ACCEPT, RELEASE, REJECT = 1, 2, 3


@dataclass
class ShareMember:
    conn: SyncConnection
    member_id: str
    epoch: int = 0
    epochs: list[int] = field(default_factory=list)
    #: topic id -> assigned partitions, as the last assignment said
    assigned: dict[Any, set[int]] = field(default_factory=dict)
    #: the share session's next epoch on the leader (0: none open)
    session: int = 0
    fetcher: SyncConnection | None = None
    #: when its last heartbeat was sent (monotonic): a member falls silent from there
    sent: float = 0.0

    def pairs(self) -> set[tuple[Any, int]]:
        return {(t, p) for t, ps in self.assigned.items() for p in ps}

    held = pairs


def served(harness: Harness) -> None:
    """UNSUPPORTED (before any set-up) where ShareFetch or ShareAcknowledge of KIP-932's
    served versions is not advertised."""
    newest(harness, ApiKey.SHARE_FETCH, SERVED)
    newest(harness, ApiKey.SHARE_ACKNOWLEDGE, SERVED)
    newest(harness, ApiKey.SHARE_GROUP_HEARTBEAT, SERVED)


class ShareGroup(HeartbeatGroup):
    heartbeat_key = ApiKey.SHARE_GROUP_HEARTBEAT
    describe_key = ApiKey.SHARE_GROUP_DESCRIBE
    describe_api = "ShareGroupDescribe"
    served = SERVED
    prefix = "sgroup"

    def new_member(self) -> ShareMember:
        conn = self.harness.connect(self.coordinator.endpoint, client_id="kc-share")
        return ShareMember(conn, str(uuid.uuid4()))

    def heartbeat(self, m: ShareMember, **override: Any) -> dict:
        """One heartbeat of ``m`` (the subscription sent with epoch 0); its state follows a
        NONE answer."""
        epoch = override.pop("MemberEpoch", m.epoch)
        body: dict[str, Any] = {
            "GroupId": self.name,
            "MemberId": m.member_id,
            "MemberEpoch": epoch,
            "RackId": None,
            "SubscribedTopicNames": list(self.topics) if epoch == 0 else None,
        }
        body.update(override)
        m.sent = time.monotonic()
        got = self.settled(m.conn, ApiKey.SHARE_GROUP_HEARTBEAT, self.version, body)
        if got["ErrorCode"] == ErrorCode.NONE and "MemberId" not in override and epoch >= 0:
            m.epoch = got["MemberEpoch"]
            m.epochs.append(m.epoch)
            if got.get("Assignment") is not None:
                m.assigned = {
                    tp["TopicId"]: set(tp["Partitions"])
                    for tp in got["Assignment"]["TopicPartitions"]
                    if tp["Partitions"]
                }
        return got

    def join(self, m: ShareMember, want: set, req: str, *, settle: bool = True) -> dict:
        """Heartbeat ``m`` from epoch 0 until its assignment covers ``want`` (bounded; only the
        join unless ``settle``): the first answer, checked NONE under ``req``."""
        first = self.heartbeat(m)
        verify.answered_none(
            first, f"ShareGroupHeartbeat v{self.version} join (epoch 0) answered", req
        )
        if settle:
            self.settle([m], want, req)
        return first

    def settle(self, members: list[ShareMember], want: set, req: str = "SHARE-GROUPS.R2") -> None:
        """Heartbeat every member in turn until each one's assignment covers ``want`` or
        ``SETTLE`` passes (the test judges what they hold); each heartbeat checked NONE under
        ``req``."""
        deadline = time.monotonic() + SETTLE
        while time.monotonic() < deadline:
            for m in members:
                got = self.heartbeat(m)
                verify.answered_none(got, f"heartbeat at epoch {m.epoch} answered", req)
            if all(want <= m.pairs() for m in members):
                return
            time.sleep(0.3)

    def configured(self, configs: dict[str, str], req: str) -> None:
        """``configure`` that must be answered NONE (else ``req`` FAILs)."""
        got = self.configure(configs)
        verify.answered_none(got, f"IncrementalAlterConfigs of group configs {configs}: error", req)

    def leave(self, m: ShareMember) -> dict:
        return self.heartbeat(m, MemberEpoch=-1)

    def configure(self, configs: dict[str, str]) -> dict:
        """IncrementalAlterConfigs SET of group configs on the GROUP resource: its answer."""
        self.harness.require(ApiKey.INCREMENTAL_ALTER_CONFIGS)
        v = self.harness.pick_version(ApiKey.INCREMENTAL_ALTER_CONFIGS)
        body = {
            "Resources": [
                {
                    "ResourceType": ConfigResourceType.GROUP,
                    "ResourceName": self.name,
                    "Configs": [
                        {"Name": k, "ConfigOperation": ConfigOperation.SET, "Value": value}
                        for k, value in configs.items()
                    ],
                }
            ],
            "ValidateOnly": False,
        }
        conn = self.harness.connect()
        return verify.expect_response(conn, ApiKey.INCREMENTAL_ALTER_CONFIGS, v, body).body[
            "Responses"
        ][0]


class ShareSession:
    """A member's share session on the leader of ``topic``'s partition 0."""

    def __init__(self, g: ShareGroup, m: ShareMember, topic: str, topic_id: Any) -> None:
        self.g, self.m, self.topic_id = g, m, topic_id
        self.conn = g.harness.connect(leader(g.harness, topic), client_id="kc-share")
        self.fetch_v = newest(g.harness, ApiKey.SHARE_FETCH, SERVED)
        self.ack_v = newest(g.harness, ApiKey.SHARE_ACKNOWLEDGE, SERVED)
        self.epoch = 0

    def fetch(
        self,
        acks: list[tuple[int, int, list[int]]] | None = None,
        *,
        max_records: int = 100,
        wait_ms: int = 200,
        **override: Any,
    ) -> dict:
        """One ShareFetch of partition 0 at the session's epoch (then advanced where the
        answer is NONE), with ``acks`` as (first, last, types) piggy-backed."""
        epoch = override.pop("ShareSessionEpoch", self.epoch)
        body: dict[str, Any] = {
            "GroupId": self.g.name,
            "MemberId": self.m.member_id,
            "ShareSessionEpoch": epoch,
            "MaxWaitMs": wait_ms,
            "MinBytes": 1,
            "MaxBytes": 1 << 20,
            "MaxRecords": max_records,
            "BatchSize": max_records,
            "Topics": [
                {
                    "TopicId": self.topic_id,
                    "Partitions": [
                        {
                            "PartitionIndex": 0,
                            "PartitionMaxBytes": 1 << 20,
                            "AcknowledgementBatches": batches(acks),
                        }
                    ],
                }
            ],
            "ForgottenTopicsData": [],
        }
        body.update(override)
        got = verify.expect_response(self.conn, ApiKey.SHARE_FETCH, self.fetch_v, body).body
        if got["ErrorCode"] == ErrorCode.NONE and "ShareSessionEpoch" not in override:
            self.epoch = -1 if epoch == -1 else epoch + 1
        return got

    def acknowledge(self, acks: list[tuple[int, int, list[int]]], **override: Any) -> dict:
        epoch = override.pop("ShareSessionEpoch", self.epoch)
        body: dict[str, Any] = {
            "GroupId": self.g.name,
            "MemberId": self.m.member_id,
            "ShareSessionEpoch": epoch,
            "Topics": [
                {
                    "TopicId": self.topic_id,
                    "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": batches(acks)}],
                }
            ],
        }
        body.update(override)
        got = verify.expect_response(self.conn, ApiKey.SHARE_ACKNOWLEDGE, self.ack_v, body).body
        if got["ErrorCode"] == ErrorCode.NONE and "ShareSessionEpoch" not in override:
            self.epoch = epoch + 1
        return got

    def acquire(self, n: int, *, timeout: float = 10.0, max_records: int = 100) -> list[int]:
        """ShareFetch until at least ``n`` offsets are acquired (bounded): the offsets."""
        got: list[int] = []
        deadline = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < deadline:
            got += offsets(self.fetch(max_records=max_records, wait_ms=500))
        return got

    def close(self) -> None:
        if self.epoch > 0:
            self.fetch(ShareSessionEpoch=-1, Topics=[])


def batches(acks: list[tuple[int, int, list[int]]] | None) -> list[dict]:
    return [
        {"FirstOffset": a, "LastOffset": b, "AcknowledgeTypes": types} for a, b, types in acks or []
    ]


def acquired(answer: dict) -> list[tuple[int, int, int]]:
    """(first, last, delivery count) of every AcquiredRecords range of the answer."""
    return [
        (a["FirstOffset"], a["LastOffset"], a["DeliveryCount"])
        for t in answer.get("Responses") or []
        for p in t["Partitions"]
        for a in p["AcquiredRecords"]
    ]


def offsets(answer: dict) -> list[int]:
    return [o for a, b, _ in acquired(answer) for o in range(a, b + 1)]


def counts(answer: dict) -> dict[int, int]:
    """offset -> delivery count of the answer's acquired records."""
    return {o: c for a, b, c in acquired(answer) for o in range(a, b + 1)}


def partition_errors(answer: dict) -> list[tuple[int, int]]:
    """(ErrorCode, AcknowledgeErrorCode or 0) of each partition of a ShareFetch answer, or the
    ErrorCode of each of a ShareAcknowledge answer's."""
    return [
        (p.get("ErrorCode", 0), p.get("AcknowledgeErrorCode", 0))
        for t in answer.get("Responses") or []
        for p in t["Partitions"]
    ]


def members(
    harness: Harness, n: int, req: str, configs: dict[str, str] | None = None
) -> tuple[ShareGroup, list[ShareMember], list[ShareSession], str]:
    """A fresh one-partition topic and share group (``configs`` set first), ``n`` members
    assigned its partition, each with a share session opened (epoch 0).

    The group reads from the earliest offset unless ``configs`` says otherwise: at Kafka's
    default (latest) the first ShareFetch starts the partition's initialisation, which under
    load can end after the test has produced, so the test's records would be skipped."""
    served(harness)
    topic = obtain(harness, "sgfetch", 1, exact=True)
    tid = topic_ids(harness, [topic.name])[topic.name]
    g = ShareGroup(harness, [topic.name])
    g.configured({"share.auto.offset.reset": "earliest", **(configs or {})}, req)
    ms = [g.new_member() for _ in range(n)]
    for m in ms:
        g.join(m, {(tid, 0)}, req, settle=False)
    g.settle(ms, {(tid, 0)}, req)
    sessions = [ShareSession(g, m, topic.name, tid) for m in ms]
    for s in sessions:
        opened = s.fetch(wait_ms=0)
        verify.answered_none(opened, "ShareFetch at share session epoch 0: error", req)
    return g, ms, sessions, topic.name


def done(g: ShareGroup, ms: list[ShareMember], sessions: list[ShareSession]) -> None:
    for s in sessions:
        s.close()
    for m in ms:
        g.leave(m)
