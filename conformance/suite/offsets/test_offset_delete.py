"""OffsetDelete (``specs/requirements/offsets.json``, OFFSETS.R8-R9): committed offsets removed
from a group with no members, refused for the topics an active consumer group subscribes to,
and GROUP_ID_NOT_FOUND for a group that does not exist. Every group and topic is the suite's."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.kafka_errors import error_name
from conformance.suite.groups.commits import Partition, commit, fetch
from conformance.suite.groups.members import Group, consumer_subscription
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.safety import fresh_name
from conformance.suite.offsets.shared import every_partition, two_topics


def offset_delete(
    harness: Harness, conn: SyncConnection, group: str, partitions: list[Partition]
) -> tuple[int, dict[Partition, int]]:
    """OffsetDelete: (top-level error, error per partition answered)."""
    by_topic: dict[str, list[int]] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    body = {
        "GroupId": group,
        "Topics": [
            {"Name": t, "Partitions": [{"PartitionIndex": p} for p in ps]}
            for t, ps in by_topic.items()
        ],
    }
    version = harness.pick_version(ApiKey.OFFSET_DELETE)
    got = verify.expect_response(conn, ApiKey.OFFSET_DELETE, version, body).body
    return got["ErrorCode"], {
        (t["Name"], p["PartitionIndex"]): p["ErrorCode"]
        for t in got["Topics"]
        for p in t["Partitions"]
    }


def name(code: int | None) -> str:
    return f"{code} ({'absent' if code is None else error_name(code)})"


@conformance("offsets/delete/empty-group", "OFFSETS.R8", api=ApiKey.OFFSET_DELETE)
def test_offsets_deleted_from_an_empty_group(harness: Harness) -> None:
    harness.require(ApiKey.OFFSET_DELETE)
    topics = two_topics(harness).open()
    group = Group(harness)
    try:
        conn = group.admin
        every = every_partition(topics)
        offsets = {(t, p): (10 + p, "m") for t, p in every}
        codes = commit(harness, conn, group.name, offsets)
        verify.check(
            set(codes.values()) == {ErrorCode.NONE}, f"OffsetCommit: {codes}", "OFFSETS.R8"
        )
        doomed = every[::2]  # every other partition: the rest must keep their offsets
        error, answered = offset_delete(harness, conn, group.name, doomed)
        verify.check(
            error == ErrorCode.NONE and answered == dict.fromkeys(doomed, ErrorCode.NONE),
            f"OffsetDelete of {doomed} in group {group.name}, which has no members: error "
            f"{name(error)}, partitions {answered}; expected NONE for each",
            "OFFSETS.R8",
        )
        got = fetch(harness, conn, group.name, list(offsets), req="OFFSETS.R8")
        have = {tp: v[0] for tp, v in got.items()}
        want = {tp: -1 if tp in doomed else v[0] for tp, v in offsets.items()}
        verify.check(
            have == want,
            f"OffsetFetch after OffsetDelete of {doomed}: {have}; expected {want}",
            "OFFSETS.R8",
        )
        ghost = fresh_name("never")
        error, answered = offset_delete(harness, Group(harness, ghost).admin, ghost, doomed)
        verify.check(
            error == ErrorCode.GROUP_ID_NOT_FOUND,
            f"OffsetDelete in group {ghost}, which does not exist: error {name(error)}, "
            f"partitions {answered}; expected GROUP_ID_NOT_FOUND",
            "OFFSETS.R8",
        )
    finally:
        group.cleanup()
        topics.close()


@conformance("offsets/delete/subscribed-topic", "OFFSETS.R9", api=ApiKey.OFFSET_DELETE)
def test_subscribed_topics_keep_their_offsets(harness: Harness) -> None:
    harness.require(ApiKey.OFFSET_DELETE)
    topics = two_topics(harness).open()
    subscribed, other = topics.names
    group = Group(harness)
    try:
        m = group.new_member()
        m.metadata = consumer_subscription([subscribed])
        r = group.rebalance(joining=[m])
        verify.check(
            r.syncs.get(m.client_id, {}).get("ErrorCode") == ErrorCode.NONE,
            f"the member subscribed to {subscribed} did not join: {r.joins} {r.syncs}",
            "OFFSETS.R9",
        )
        offsets = {(subscribed, 0): (7, "s"), (other, 0): (8, "o")}
        codes = commit(
            harness,
            group.admin,
            group.name,
            offsets,
            generation=m.generation,
            member_id=m.member_id,
        )
        verify.check(
            set(codes.values()) == {ErrorCode.NONE},
            f"the member's OffsetCommit: {codes}",
            "OFFSETS.R9",
        )
        error, answered = offset_delete(harness, group.admin, group.name, list(offsets))
        want = {(subscribed, 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, (other, 0): ErrorCode.NONE}
        verify.check(
            error == ErrorCode.NONE and answered == want,
            f"OffsetDelete of {list(offsets)} in group {group.name}, whose member subscribes to "
            f"{subscribed}: error {name(error)}, partitions {answered}; expected "
            f"{ {tp: name(c) for tp, c in want.items()} }",
            "OFFSETS.R9",
        )
        got = fetch(harness, group.admin, group.name, list(offsets), req="OFFSETS.R9")
        have = {tp: v[0] for tp, v in got.items()}
        kept = {(subscribed, 0): 7, (other, 0): -1}
        verify.check(
            have == kept,
            f"OffsetFetch after the OffsetDelete: {have}; expected {kept}",
            "OFFSETS.R9",
        )
    finally:
        group.cleanup()
        topics.close()
