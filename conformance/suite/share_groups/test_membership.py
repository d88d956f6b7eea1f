"""KIP-932 share group membership on the wire: joining with epoch 0 and a client-chosen member
id, epochs, the assignment of every subscribed partition, a partition shared by two members,
leaving with epoch -1, the heartbeat errors and ShareGroupDescribe."""

from __future__ import annotations

import time
import uuid

from conformance.protocol import ApiKey, ErrorCode
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.consumer_groups.shared import applied, newest, removed, topic_ids
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.provision import obtain
from conformance.suite.kit.safety import fresh_name
from conformance.suite.share_groups.shared import SERVED, SETTLE, ShareGroup


def assignment(described_member: dict) -> set:
    return {
        (tp["TopicId"], p)
        for tp in described_member["Assignment"]["TopicPartitions"]
        for p in tp["Partitions"]
    }


@conformance(
    "share-groups/heartbeat/join-share-leave",
    "SHARE-GROUPS.R1",
    "SHARE-GROUPS.R2",
    "SHARE-GROUPS.R3",
    "SHARE-GROUPS.R4",
    "SHARE-GROUPS.R7",
    api=ApiKey.SHARE_GROUP_HEARTBEAT,
)
def test_join_share_leave(harness: Harness) -> None:
    topic = obtain(harness, "sgroup", 1, exact=True)
    tid = topic_ids(harness, [topic.name])[topic.name]
    want = {(tid, 0)}
    g = ShareGroup(harness, [topic.name])
    none = g.describe()
    verify.soft(
        harness,
        none["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND,
        f"ShareGroupDescribe of a group that does not exist: error {none['ErrorCode']}",
        "SHARE-GROUPS.R7",
    )
    a = g.new_member()
    sent = a.member_id
    got = g.join(a, want, "SHARE-GROUPS.R1", settle=False)
    g.settle([a], want)
    verify.soft(
        harness,
        got["MemberEpoch"] > 0 and got["HeartbeatIntervalMs"] > 0 and got["MemberId"] == sent,
        f"join: member epoch {got['MemberEpoch']}, heartbeat interval "
        f"{got['HeartbeatIntervalMs']}, member id {got['MemberId']!r} (sent {sent!r})",
        "SHARE-GROUPS.R1",
    )
    verify.soft(
        harness,
        want <= a.pairs(),
        f"a member subscribed to {topic.name} heartbeating for a while is assigned "
        f"{sorted(a.pairs())}, not partition 0",
        "SHARE-GROUPS.R2",
    )
    b = g.new_member()
    g.join(b, want, "SHARE-GROUPS.R1", settle=False)
    g.settle([a, b], want)
    verify.soft(
        harness,
        want <= a.pairs() and want <= b.pairs(),
        f"two members on a one-partition topic: assigned {sorted(a.pairs())} and "
        f"{sorted(b.pairs())}; both should share partition 0",
        "SHARE-GROUPS.R3",
    )
    for m in (a, b):
        verify.soft(
            harness,
            m.epochs == sorted(m.epochs),
            f"a member's epochs went back: {m.epochs}",
            "SHARE-GROUPS.R2",
        )
    described = g.describe()
    members = {x["MemberId"]: x for x in described.get("Members") or []}
    verify.soft(
        harness,
        described["ErrorCode"] == ErrorCode.NONE and set(members) == {a.member_id, b.member_id},
        f"ShareGroupDescribe of two members: error {described['ErrorCode']}, "
        f"members {sorted(members)}",
        "SHARE-GROUPS.R7",
    )
    for m in (a, b):
        x = members.get(m.member_id)
        if x is None:
            continue
        verify.soft(
            harness,
            x["MemberEpoch"] == m.epoch
            and assignment(x) == m.pairs()
            and described["GroupEpoch"] >= m.epoch,
            f"ShareGroupDescribe says member epoch {x['MemberEpoch']}, assignment "
            f"{sorted(assignment(x))}, group epoch {described['GroupEpoch']}; its heartbeat "
            f"said epoch {m.epoch}, assignment {sorted(m.pairs())}",
            "SHARE-GROUPS.R7",
        )
    left = g.leave(b)
    verify.soft(
        harness,
        left["ErrorCode"] == ErrorCode.NONE and left["MemberEpoch"] == -1,
        f"leave (epoch -1): error {left['ErrorCode']}, member epoch {left['MemberEpoch']}",
        "SHARE-GROUPS.R4",
    )
    after = [x["MemberId"] for x in g.describe().get("Members") or []]
    verify.soft(
        harness,
        after == [a.member_id],
        f"ShareGroupDescribe after a member left lists {after}",
        "SHARE-GROUPS.R4",
    )
    g.leave(a)


@conformance(
    "share-groups/heartbeat/errors",
    "SHARE-GROUPS.R5",
    "SHARE-GROUPS.R6",
    api=ApiKey.SHARE_GROUP_HEARTBEAT,
)
def test_heartbeat_errors(harness: Harness) -> None:
    g = ShareGroup(harness, [fresh_name("sg-topic")])
    a = g.new_member()
    got = g.heartbeat(a)
    verify.answered_none(got, "join (epoch 0) answered", "SHARE-GROUPS.R5")
    ahead = g.heartbeat(a, MemberEpoch=a.epoch + 5)
    verify.soft(
        harness,
        ahead["ErrorCode"] == ErrorCode.FENCED_MEMBER_EPOCH,
        f"heartbeat with epoch {a.epoch + 5} (member at {a.epoch}): error {ahead['ErrorCode']}",
        "SHARE-GROUPS.R5",
    )
    stranger = g.heartbeat(a, MemberId=str(uuid.uuid4()), MemberEpoch=1)
    verify.soft(
        harness,
        stranger["ErrorCode"] == ErrorCode.UNKNOWN_MEMBER_ID,
        f"heartbeat of an unknown member id at epoch 1: error {stranger['ErrorCode']}",
        "SHARE-GROUPS.R5",
    )
    nobody = g.new_member()
    empty = g.heartbeat(nobody, MemberId="")
    verify.soft(
        harness,
        empty["ErrorCode"] == ErrorCode.INVALID_REQUEST,
        f"join with an empty member id: error {empty['ErrorCode']}",
        "SHARE-GROUPS.R6",
    )
    unsubscribed = g.heartbeat(nobody, SubscribedTopicNames=None)
    verify.soft(
        harness,
        unsubscribed["ErrorCode"] == ErrorCode.INVALID_REQUEST,
        f"join (epoch 0) without subscribed topic names: error {unsubscribed['ErrorCode']}",
        "SHARE-GROUPS.R6",
    )
    g.leave(a)


SESSION_REQ = "SHARE-GROUPS.R20"
#: the group's share.session.timeout.ms and share.heartbeat.interval.ms: within the bounds of a
#: target run with group.share.min.session.timeout.ms and ...heartbeat.interval.ms lowered (the
#: kafka and reference targets do), out of Kafka's default bounds (45 s and 5 s)
SESSION_MS, INTERVAL_MS = 1500, 500


@conformance(
    "share-groups/heartbeat/session-timeout",
    SESSION_REQ,
    api=ApiKey.SHARE_GROUP_HEARTBEAT,
)
def test_session_timeout(harness: Harness) -> None:
    newest(harness, ApiKey.SHARE_GROUP_HEARTBEAT, SERVED)
    topic = obtain(harness, "sgsilent", 2, exact=True)
    tid = topic_ids(harness, [topic.name])[topic.name]
    want = {(tid, p) for p in range(topic.partitions)}
    g = ShareGroup(harness, [topic.name])
    a, b = g.new_member(), g.new_member()
    # the members join and are assigned under the target's default session (45 s): on a loaded
    # host two heartbeats can outlast 1.5 s
    for m in (a, b):
        g.join(m, want, SESSION_REQ, settle=False)
    deadline = time.monotonic() + SETTLE
    while time.monotonic() < deadline and not (a.pairs() and b.pairs()):
        time.sleep(INTERVAL_MS / 1000)
        g.heartbeat(a)
        g.heartbeat(b)
    configs = {
        "share.heartbeat.interval.ms": str(INTERVAL_MS),
        "share.session.timeout.ms": str(SESSION_MS),
    }
    got = g.configure(configs)
    if got["ErrorCode"] == ErrorCode.INVALID_CONFIG:
        for m in (a, b):
            g.leave(m)
        raise MissingPrecondition(
            f"a share group session timeout of {SESSION_MS} ms (the target's bounds refuse it: "
            f"{got.get('ErrorMessage')}; lower group.share.min.session.timeout.ms and "
            "group.share.min.heartbeat.interval.ms)"
        )
    verify.answered_none(got, f"IncrementalAlterConfigs GROUP {configs}: error", SESSION_REQ)
    # a falls silent from the send of its first heartbeat the coordinator answered with the
    # short session's configs (b's round trip after it counts in); b heartbeats twice an interval
    applied(g, a, INTERVAL_MS)
    what = f"a member of a group with share.session.timeout.ms {SESSION_MS} stopped heartbeating"
    removed(harness, g, a, b, want, (a.sent, SESSION_MS, INTERVAL_MS / 2000), what, SESSION_REQ)
    g.leave(b)
