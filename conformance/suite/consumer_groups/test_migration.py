"""The online migration between classic groups and KIP-848 consumer groups (Kafka 4.x's default
migration policy, BIDIRECTIONAL): a classic consumer inside a consumer group (JoinGroup,
SyncGroup, Heartbeat, OffsetCommit, LeaveGroup), a classic group of consumers upgraded when a
ConsumerGroupHeartbeat joins it, and downgraded when its last consumer-protocol member leaves.
Each step's partitions are never held by the classic member and a consumer-protocol member at
once."""

from __future__ import annotations

import struct
import time
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.consumer_groups.shared import (
    SETTLE,
    ConsumerGroup,
    Member,
    converge,
    joined,
    served,
    topic_ids,
)
from conformance.suite.groups.members import Group, consumer_subscription
from conformance.suite.groups.members import Member as ClassicMember
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.provision import obtain

MIXED, UPGRADE, DOWNGRADE = (f"CONSUMER-GROUPS.R{n}" for n in (21, 22, 23))
#: ConsumerGroupDescribe v1's MemberType of a classic member and of a consumer-protocol one
CLASSIC_TYPE, CONSUMER_TYPE = 0, 1


def assignment_bytes(topic: str, partitions: list[int]) -> bytes:
    """A ConsumerProtocolAssignment v0 of one topic's partitions."""
    name = topic.encode()
    out = struct.pack(">hih", 0, 1, len(name)) + name
    return out + struct.pack(f">i{len(partitions)}ii", len(partitions), *partitions, -1)


def assigned_partitions(data: bytes) -> dict[str, set[int]] | None:
    """A ConsumerProtocolAssignment's partitions by topic (None: it does not parse)."""
    try:
        at, out = 2, {}
        (count,) = struct.unpack_from(">i", data, at)
        at += 4
        for _ in range(count):
            (size,) = struct.unpack_from(">h", data, at)
            topic = data[at + 2 : at + 2 + size].decode()
            (n,) = struct.unpack_from(">i", data, at + 2 + size)
            at += 6 + size
            out[topic] = set(struct.unpack_from(f">{n}i", data, at))
            at += 4 * n
        return out
    except (struct.error, UnicodeDecodeError):
        return None


class ClassicConsumer:
    """One classic consumer of the group (JoinGroup, SyncGroup, Heartbeat at the versions the
    target picks), holding what its last SyncGroup gave it; ``req`` names the checks."""

    def __init__(self, classic: Group, topic: str, req: str) -> None:
        self.classic, self.topic, self.req = classic, topic, req
        self.m: ClassicMember = classic.new_member()
        self.m.metadata = consumer_subscription([topic])
        self.held: set[int] = set()
        self.last_join: dict = {}

    def join(self) -> dict:
        """JoinGroup until answered (its MEMBER_ID_REQUIRED first); what it held is given up
        (a classic consumer revokes before it rejoins)."""
        self.held = set()
        v = self.classic.versions[ApiKey.JOIN_GROUP]
        for _ in range(3):
            got = self.classic.finish(self.m, ApiKey.JOIN_GROUP, self.classic.join(self.m))
            if got["ErrorCode"] == ErrorCode.MEMBER_ID_REQUIRED and got["MemberId"]:
                self.m.member_id = got["MemberId"]
                continue
            break
        verify.check(
            got["ErrorCode"] == ErrorCode.NONE,
            f"JoinGroup v{v} of a classic consumer: error {got['ErrorCode']}",
            self.req,
        )
        self.m.generation = got["GenerationId"]
        self.last_join = got
        return got

    def sync(self, assignments: dict[str, bytes] | None = None) -> set[int]:
        v = self.classic.versions[ApiKey.SYNC_GROUP]
        body = self.classic.sync_body(self.m, assignments or {})
        got = self.classic.request(ApiKey.SYNC_GROUP, v, body, self.m.conn).body
        verify.check(
            got["ErrorCode"] == ErrorCode.NONE,
            f"SyncGroup v{v} of a classic consumer at generation {self.m.generation}: error "
            f"{got['ErrorCode']}",
            self.req,
        )
        parts = assigned_partitions(got["Assignment"])
        verify.check(
            parts is not None and set(parts) <= {self.topic},
            f"SyncGroup v{v}: the assignment {got['Assignment']!r} is not a "
            f"ConsumerProtocolAssignment of topic {self.topic}",
            self.req,
        )
        assert parts is not None
        self.held = parts.get(self.topic, set())
        return self.held

    def heartbeat(self) -> int:
        return self.classic.heartbeat(self.m)

    def step(self) -> None:
        """A heartbeat; when told to rejoin, JoinGroup then SyncGroup."""
        code = self.heartbeat()
        verify.check(
            code in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS),
            f"Heartbeat v{self.classic.versions[ApiKey.HEARTBEAT]} of the classic consumer at "
            f"generation {self.m.generation}: error {code}",
            self.req,
        )
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            self.join()
            self.sync()


def share(
    harness: Harness, g: ConsumerGroup, m: Member, c: ClassicConsumer, ids: dict, req: str
) -> None:
    """Heartbeat both until they split the topic's partitions, never holding one both at
    once (each step checked)."""
    tid = ids[c.topic]
    deadline = time.monotonic() + SETTLE
    while True:
        got = g.heartbeat(m)
        verify.answered_none(
            got,
            f"ConsumerGroupHeartbeat of the consumer-protocol member at epoch {m.epoch}: error",
            req,
        )
        c.step()
        mine = m.owned.get(tid, set())
        verify.check(
            not mine & c.held,
            f"partitions {sorted(mine & c.held)} held by the consumer-protocol member (epoch "
            f"{m.epoch}) and the classic consumer (generation {c.m.generation}) at once",
            req,
        )
        if (mine and c.held and mine | c.held == {0, 1}) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    verify.check(
        bool(mine) and bool(c.held) and mine | c.held == {0, 1},
        f"after {SETTLE:.0f} s the consumer-protocol member holds {sorted(mine)} and the "
        f"classic consumer {sorted(c.held)}: not the 2 partitions split between them",
        req,
    )


def described_member(g: ConsumerGroup, member_id: str) -> dict | None:
    return next((x for x in g.describe().get("Members") or [] if x["MemberId"] == member_id), None)


def check_type(harness: Harness, g: ConsumerGroup, found: dict | None, want: int, req: str):
    v = max(harness.advertised_on("client")[ApiKey.CONSUMER_GROUP_DESCRIBE])
    if found is None or v < 1:
        return
    verify.soft(
        harness,
        found.get("MemberType") == want,
        f"ConsumerGroupDescribe v{v}: member {found['MemberId']} has MemberType "
        f"{found.get('MemberType')}; expected {want} ({'classic' if want == 0 else 'consumer'})",
        req,
    )


def commit(harness: Harness, c: ClassicConsumer, generation: int) -> int:
    """OffsetCommit of partition 0 by the classic consumer with ``generation`` (a version a
    classic consumer of Kafka 3.x sends: topics by name)."""
    v = harness.pick_version(ApiKey.OFFSET_COMMIT, "1-8")
    part = dict(PartitionIndex=0, CommittedOffset=0, CommittedLeaderEpoch=-1)
    body: dict[str, Any] = {
        "GroupId": c.classic.name,
        "GenerationIdOrMemberEpoch": generation,
        "MemberId": c.m.member_id,
        "GroupInstanceId": None,
        "RetentionTimeMs": -1,
        "Topics": [{"Name": c.topic, "Partitions": [{**part, "CommittedMetadata": None}]}],
    }
    got = verify.expect_response(c.classic.admin, ApiKey.OFFSET_COMMIT, v, body).body
    return got["Topics"][0]["Partitions"][0]["ErrorCode"]


@conformance(
    "consumer-groups/migration/classic-member",
    MIXED,
    api=ApiKey.JOIN_GROUP,
)
def test_classic_consumer_in_a_consumer_group(harness: Harness) -> None:
    served(harness)
    topic = obtain(harness, "cgmixed", 2, exact=True)
    ids = topic_ids(harness, [topic.name])
    g = ConsumerGroup(harness, [topic.name])
    a = g.new_member()
    joined(harness, g, a, "consumer-protocol member")
    converge(harness, g, [a], {(ids[topic.name], 0), (ids[topic.name], 1)}, "first member", MIXED)
    classic = Group(harness, g.name)
    c = ClassicConsumer(classic, topic.name, MIXED)
    try:
        got = c.join()
        found = described_member(g, c.m.member_id)
        verify.soft(
            harness,
            found is not None and got["GenerationId"] == found["MemberEpoch"],
            f"JoinGroup of a classic consumer into a consumer group: generation "
            f"{got['GenerationId']}; ConsumerGroupDescribe lists it as {found}: expected it "
            "listed with the generation as its member epoch",
            MIXED,
        )
        shape = (got["ProtocolType"], got["ProtocolName"], got["Members"])
        verify.soft(
            harness,
            shape == ("consumer", "range", []) and got["Leader"] != c.m.member_id,
            f"JoinGroup answer (protocol type, protocol name, members) {shape}, leader "
            f"{got['Leader']!r} (member {c.m.member_id}): expected ('consumer', 'range', []), "
            "the member not the leader",
            MIXED,
        )
        c.sync()
        check_type(harness, g, found, CLASSIC_TYPE, MIXED)
        check_type(harness, g, described_member(g, a.member_id), CONSUMER_TYPE, MIXED)
        share(harness, g, a, c, ids, MIXED)
        codes = (commit(harness, c, c.m.generation), commit(harness, c, c.m.generation + 1))
        verify.soft(
            harness,
            codes == (ErrorCode.NONE, ErrorCode.ILLEGAL_GENERATION),
            f"OffsetCommit of the classic consumer with its generation {c.m.generation} and "
            f"with {c.m.generation + 1}: errors {codes}; expected (NONE, ILLEGAL_GENERATION)",
            MIXED,
        )
        lv = classic.versions[ApiKey.LEAVE_GROUP]
        left = classic.request(ApiKey.LEAVE_GROUP, lv, classic.leave_body([c.m])).body
        listed = [x["MemberId"] for x in g.describe().get("Members") or []]
        verify.soft(
            harness,
            left["ErrorCode"] == ErrorCode.NONE and listed == [a.member_id],
            f"LeaveGroup v{lv} of the classic consumer: error {left['ErrorCode']}; "
            f"ConsumerGroupDescribe then lists {listed}, expected only {a.member_id}",
            MIXED,
        )
    finally:
        g.heartbeat(a, MemberEpoch=-1)
        classic.cleanup()


@conformance(
    "consumer-groups/migration/upgrade-downgrade",
    UPGRADE,
    DOWNGRADE,
    api=ApiKey.CONSUMER_GROUP_HEARTBEAT,
)
def test_upgrade_and_downgrade(harness: Harness) -> None:
    served(harness)
    topic = obtain(harness, "cgupgrade", 2, exact=True)
    ids = topic_ids(harness, [topic.name])
    classic = Group(harness)
    c = ClassicConsumer(classic, topic.name, UPGRADE)
    g = ConsumerGroup(harness, [topic.name], classic.name)
    b = g.new_member()
    try:
        c.join()
        c.sync({c.m.member_id: assignment_bytes(topic.name, [0, 1])})
        generation = c.m.generation
        got = g.heartbeat(b)
        verify.check(
            got["ErrorCode"] == ErrorCode.NONE,
            f"ConsumerGroupHeartbeat join (epoch 0) to a Stable classic group of protocol type "
            f"'consumer': error {got['ErrorCode']} ({got.get('ErrorMessage')}); expected NONE "
            "(the group upgraded)",
            UPGRADE,
        )
        found = described_member(g, c.m.member_id)
        seen = None if found is None else (found["MemberEpoch"], found["Assignment"])
        want = (generation, [{"TopicId": ids[topic.name], "TopicName": topic.name}])
        verify.soft(
            harness,
            found is not None
            and found["MemberEpoch"] == generation
            and [set(x["Partitions"]) for x in found["Assignment"]["TopicPartitions"]] == [{0, 1}],
            f"ConsumerGroupDescribe after the upgrade: the classic member (epoch, assignment) "
            f"{seen}; expected epoch {generation} (its generation) and partitions 0 and 1 of "
            f"{want[1]}",
            UPGRADE,
        )
        check_type(harness, g, found, CLASSIC_TYPE, UPGRADE)
        share(harness, g, b, c, ids, UPGRADE)
        b_id = b.member_id
        c.req = DOWNGRADE
        left = g.heartbeat(b, MemberEpoch=-1)
        verify.check(
            left["ErrorCode"] == ErrorCode.NONE,
            f"the consumer-protocol member's leave: error {left['ErrorCode']}",
            DOWNGRADE,
        )
        d = classic.describe()
        seen_d = (d["ErrorCode"], d["ProtocolType"], [x["MemberId"] for x in d["Members"]])
        verify.soft(
            harness,
            seen_d == (ErrorCode.NONE, "consumer", [c.m.member_id])
            and d["GroupState"] in ("PreparingRebalance", "CompletingRebalance", "Stable"),
            f"DescribeGroups after the last consumer-protocol member {b_id} left: (error, "
            f"protocol type, members) {seen_d}, state {d['GroupState']!r}; expected a classic "
            f"group of protocol type 'consumer' with the classic member {c.m.member_id}",
            DOWNGRADE,
        )
        code = c.heartbeat()
        verify.soft(
            harness,
            code == ErrorCode.REBALANCE_IN_PROGRESS,
            f"the classic member's Heartbeat after the downgrade: error {code}; expected "
            "REBALANCE_IN_PROGRESS",
            DOWNGRADE,
        )
        again = c.join()
        verify.soft(
            harness,
            again["Leader"] == c.m.member_id and again["GenerationId"] > generation,
            f"the classic member's JoinGroup after the downgrade: leader {again['Leader']!r}, "
            f"generation {again['GenerationId']}; expected itself as leader, a generation "
            f"past {generation}",
            DOWNGRADE,
        )
        c.sync({c.m.member_id: assignment_bytes(topic.name, [0, 1])})
        classic.members = [c.m]
    finally:
        if b.epoch > 0:
            g.heartbeat(b, MemberEpoch=-1)
        classic.members = [c.m]
        classic.cleanup()
