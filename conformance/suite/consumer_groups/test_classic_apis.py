"""The older group APIs meeting a KIP-848 consumer group: OffsetFetch and OffsetCommit judge the
member id and member epoch they carry, DescribeGroups (the classic API) answers for a consumer
group as Kafka does, and a consumer-protocol join never takes over a classic group of another
protocol type."""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.consumer_groups.shared import ConsumerGroup, advertised, joined, served
from conformance.suite.groups.members import Group
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.provision import obtain
from conformance.suite.kit.safety import fresh_name
from conformance.suite.kit.topic_ids import name_both_ways


@conformance(
    "consumer-groups/offsets/member-checks",
    "CONSUMER-GROUPS.R16",
    api=ApiKey.OFFSET_FETCH,
)
def test_offset_member_checks(harness: Harness) -> None:
    fv = harness.pick_version(ApiKey.OFFSET_FETCH, "9+")
    cv = harness.pick_version(ApiKey.OFFSET_COMMIT, "9+")
    topic = obtain(harness, "cgoffsets", 1)
    g = ConsumerGroup(harness, [topic.name])
    m = g.new_member()
    joined(harness, g, m, "member")

    def fetch(member_id: str | None, epoch: int) -> int:
        entry = {
            "GroupId": g.name,
            "MemberId": member_id,
            "MemberEpoch": epoch,
            "Topics": [{"Name": topic.name, "PartitionIndexes": [0]}],
        }
        name_both_ways(harness, ApiKey.OFFSET_FETCH, fv, entry["Topics"])
        body = {"Groups": [entry], "RequireStable": False}
        got = verify.expect_response(g.admin, ApiKey.OFFSET_FETCH, fv, body).body
        return got["Groups"][0]["ErrorCode"]

    def commit(member_id: str, epoch: int) -> int:
        part = {
            "PartitionIndex": 0,
            "CommittedOffset": 0,
            "CommittedLeaderEpoch": -1,
            "CommittedMetadata": None,
        }
        body: dict[str, Any] = {
            "GroupId": g.name,
            "GenerationIdOrMemberEpoch": epoch,
            "MemberId": member_id,
            "GroupInstanceId": None,
            "Topics": [{"Name": topic.name, "Partitions": [part]}],
        }
        name_both_ways(harness, ApiKey.OFFSET_COMMIT, cv, body["Topics"])
        got = verify.expect_response(g.admin, ApiKey.OFFSET_COMMIT, cv, body).body
        return got["Topics"][0]["Partitions"][0]["ErrorCode"]

    stranger = fresh_name("nobody")
    for what, got, want in (
        (
            f"OffsetFetch v{fv} with the member's id and epoch {m.epoch}",
            fetch(m.member_id, m.epoch),
            ErrorCode.NONE,
        ),
        (
            f"OffsetFetch v{fv} with the member's id and epoch {m.epoch + 1} (member at {m.epoch})",
            fetch(m.member_id, m.epoch + 1),
            ErrorCode.STALE_MEMBER_EPOCH,
        ),
        (
            f"OffsetFetch v{fv} with a member id the group does not have, epoch {m.epoch}",
            fetch(stranger, m.epoch),
            ErrorCode.UNKNOWN_MEMBER_ID,
        ),
        (
            f"OffsetFetch v{fv} without member (id null, epoch -1: an admin's fetch)",
            fetch(None, -1),
            ErrorCode.NONE,
        ),
        (
            f"OffsetCommit v{cv} with a member id the group does not have, epoch {m.epoch}",
            commit(stranger, m.epoch),
            ErrorCode.UNKNOWN_MEMBER_ID,
        ),
    ):
        verify.soft(
            harness,
            got == want,
            f"{what}: error {got}; expected {ErrorCode(want).name}",
            "CONSUMER-GROUPS.R16",
        )
    g.heartbeat(m, MemberEpoch=-1)


@conformance(
    "consumer-groups/describe-groups/classic-api",
    "CONSUMER-GROUPS.R17",
    api=ApiKey.DESCRIBE_GROUPS,
)
def test_describe_groups_of_a_consumer_group(harness: Harness) -> None:
    versions = advertised(harness, ApiKey.DESCRIBE_GROUPS)
    g = ConsumerGroup(harness, [fresh_name("cg-topic")])
    m = g.new_member()
    joined(harness, g, m, "member")
    for v in sorted({harness.pick_version(ApiKey.DESCRIBE_GROUPS), versions[-1]}):
        harness.note(ApiKey.DESCRIBE_GROUPS, v, "client")
        body = {"Groups": [g.name], "IncludeAuthorizedOperations": False}
        (d,) = verify.expect_response(g.admin, ApiKey.DESCRIBE_GROUPS, v, body).body["Groups"]
        seen = (d["ErrorCode"], d["GroupState"], len(d["Members"]))
        if v >= 6:
            ok = d["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND and not d["Members"]
            want = "GROUP_ID_NOT_FOUND, no members"
        else:
            ok = seen == (ErrorCode.NONE, "Dead", 0)
            want = "error NONE, state Dead, no members"
        verify.soft(
            harness,
            ok,
            f"DescribeGroups v{v} of a consumer group with one member: (error, state, members) "
            f"{seen}; expected {want}",
            "CONSUMER-GROUPS.R17",
        )
    g.heartbeat(m, MemberEpoch=-1)


@conformance(
    "consumer-groups/heartbeat/classic-group-not-consumer",
    "CONSUMER-GROUPS.R20",
    api=ApiKey.CONSUMER_GROUP_HEARTBEAT,
)
def test_join_of_a_classic_group_of_another_protocol(harness: Harness) -> None:
    served(harness)
    classic = Group(harness)
    try:
        m = classic.new_member()
        jv = classic.versions[ApiKey.JOIN_GROUP]
        got = classic.request(ApiKey.JOIN_GROUP, jv, classic.join_body(m, protocol_type="connect"))
        if got.body["ErrorCode"] == ErrorCode.MEMBER_ID_REQUIRED:
            m.member_id = got.body["MemberId"]
            body = classic.join_body(m, protocol_type="connect")
            got = classic.request(ApiKey.JOIN_GROUP, jv, body)
        verify.check(
            got.body["ErrorCode"] == ErrorCode.NONE,
            f"JoinGroup v{jv} of a classic group of protocol type 'connect': error "
            f"{got.body['ErrorCode']}",
            "CONSUMER-GROUPS.R20",
        )
        m.generation = got.body["GenerationId"]
        sync = {**classic.sync_body(m, {m.member_id: b""}), "ProtocolType": "connect"}
        classic.request(ApiKey.SYNC_GROUP, classic.versions[ApiKey.SYNC_GROUP], sync)
        g = ConsumerGroup(harness, [fresh_name("cg-topic")], classic.name)
        c = g.new_member()
        refused = g.heartbeat(c)
        verify.soft(
            harness,
            refused["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND,
            f"ConsumerGroupHeartbeat join (epoch 0) to a classic group of protocol type "
            f"'connect' with a member: error {refused['ErrorCode']} "
            f"({refused.get('ErrorMessage')}); expected GROUP_ID_NOT_FOUND",
            "CONSUMER-GROUPS.R20",
        )
        if refused["ErrorCode"] == ErrorCode.NONE:
            g.heartbeat(c, MemberEpoch=-1)
        dv = harness.pick_version(ApiKey.DESCRIBE_GROUPS)
        body = {"Groups": [classic.name], "IncludeAuthorizedOperations": False}
        (d,) = verify.expect_response(classic.admin, ApiKey.DESCRIBE_GROUPS, dv, body).body[
            "Groups"
        ]
        seen = (d["ErrorCode"], d["ProtocolType"], [x["MemberId"] for x in d["Members"]])
        verify.soft(
            harness,
            seen == (ErrorCode.NONE, "connect", [m.member_id]),
            f"DescribeGroups v{dv} of the classic group after the refused join: (error, "
            f"protocol type, members) {seen}; expected it unchanged, with its one member",
            "CONSUMER-GROUPS.R20",
        )
        classic.members = [m]
    finally:
        classic.cleanup()
