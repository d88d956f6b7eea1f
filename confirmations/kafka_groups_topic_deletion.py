# ruff: noqa: E501 - the printed lines say what Kafka answers, in full
"""Hand confirmation, on the wire, of why GROUPS and OFFSETS verdicts of the classic group
coordinator moved between release lines from run to run (issue 41): deleting any topic makes
every Empty group that has no committed offset Dead on that coordinator, however unrelated the
topic. Kafka's GroupCoordinator.handleDeletedPartitions runs GroupMetadataManager.
cleanupGroupMetadata over all its groups, which turns an Empty group without offsets Dead and
removes it (INFO "Group <id> transitioned to Dead in generation N"). In a whole run other tests
delete their topics while a group test is between two steps: a new member that got its id
(MEMBER_ID_REQUIRED keeps the group Empty, the member pending) then gets UNKNOWN_MEMBER_ID for
its second JoinGroup, an Empty group is described Dead and no longer listed.

Raw requests with the project's codec and wire client, no suite code, against released brokers
started as the kafka target starts them. Per release, three groups, one topic deleted between:
- a member that asked for its id joins with it after the deletion;
- a group whose only member left (Empty, no offset) is described before and after;
- the same with an offset committed (the control: it keeps the group).

Usage: python -m confirmations.kafka_groups_topic_deletion 3.4.1 '3.4.1?store=zookeeper' 4.4.0
"""

import asyncio
import uuid

from confirmations.kafka_groups import coordinator, join_body, subscription_v0
from confirmations.launch import connect, each_target
from conformance.client.create_topics import create_body
from conformance.client.wire import Connection
from conformance.protocol.codec import Codec

CREATE, DELETE, JOIN, SYNC, LEAVE, DESCRIBE, COMMIT = 19, 20, 11, 14, 13, 15, 8
TRANSIENT = (14, 15, 16)
META = subscription_v0(b"subscription of kc-member-1")


async def on_some_broker(codec, target, api, version, body, key):
    """Sent to each broker until one does it (ZooKeeper mode: only the controller does)."""
    got = None
    for ep in target.bootstrap:
        conn = await connect(ep.host, ep.port, codec)
        try:
            got = (await conn.request(api, version, body)).body
        finally:
            await conn.close()
        if all(t["ErrorCode"] == 0 for t in got[key]):
            return got
    return got


async def made(codec, target, prefix: str) -> tuple[str, list[int]]:
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    body = create_body({topic: 1})
    got = await on_some_broker(codec, target, CREATE, 4, body, "Topics")
    await asyncio.sleep(1.0)  # every broker knows it
    return topic, [t["ErrorCode"] for t in got["Topics"]]


async def topic_made_and_deleted(codec, target) -> str:
    topic, codes = await made(codec, target, "kc-conf-unrelated")
    gone = await on_some_broker(
        codec, target, DELETE, 4, {"TopicNames": [topic], "TimeoutMs": 30000}, "Responses"
    )
    await asyncio.sleep(3.0)  # the brokers apply the deletion (and the coordinator its cleanup)
    return f"topic {topic}: CreateTopics {codes}, DeleteTopics {[t['ErrorCode'] for t in gone['Responses']]}"


async def first_join(conn, group) -> dict:
    for _ in range(150):
        got = (await conn.request(JOIN, 5, join_body(group, "", META))).body
        if got["ErrorCode"] not in TRANSIENT:
            return got
        await asyncio.sleep(0.2)
    return got


async def describe(conn, group) -> str:
    got = (
        await conn.request(DESCRIBE, 4, {"Groups": [group], "IncludeAuthorizedOperations": False})
    ).body["Groups"][0]
    return f"DescribeGroups v4: ErrorCode {got['ErrorCode']}, state {got['GroupState']!r}"


async def emptied_group(codec, target, ep, commit: bool):
    """A group whose one member joined, synced and left (Empty); with ``commit``, an offset
    committed by the member first. Returns (group, connection to its coordinator)."""
    group = f"kc-conf-{uuid.uuid4().hex[:8]}"
    where = await coordinator(codec, ep, group)
    conn = await Connection.open(where["Host"], where["Port"], codec=codec, client_id="kc-member-1")
    first = await first_join(conn, group)
    joined = (await conn.request(JOIN, 5, join_body(group, first["MemberId"], META))).body
    member, generation = joined["MemberId"], joined["GenerationId"]
    await conn.request(
        SYNC,
        3,
        {
            "GroupId": group,
            "GenerationId": generation,
            "MemberId": member,
            "GroupInstanceId": None,
            "Assignments": [{"MemberId": member, "Assignment": b""}],
        },
    )
    if commit:
        kept, _ = await made(codec, target, "kc-conf-kept")
        got = (
            await conn.request(
                COMMIT,
                7,
                {
                    "GroupId": group,
                    "GenerationIdOrMemberEpoch": generation,
                    "MemberId": member,
                    "GroupInstanceId": None,
                    "Topics": [
                        {
                            "Name": kept,
                            "Partitions": [
                                {
                                    "PartitionIndex": 0,
                                    "CommittedOffset": 0,
                                    "CommittedLeaderEpoch": -1,
                                    "CommittedMetadata": "",
                                }
                            ],
                        }
                    ],
                },
            )
        ).body
        print(
            f"    OffsetCommit v7 of an offset: {[p['ErrorCode'] for t in got['Topics'] for p in t['Partitions']]}"
        )
    left = (
        await conn.request(
            LEAVE, 3, {"GroupId": group, "Members": [{"MemberId": member, "GroupInstanceId": None}]}
        )
    ).body
    print(
        f"    joined generation {generation} (JoinGroup {joined['ErrorCode']}), LeaveGroup {left['ErrorCode']}"
    )
    return group, conn


async def probe(target):
    codec = Codec.from_specs().strict()
    ep = target.bootstrap[0]
    print(f"Apache Kafka {target.version} ({target.store}), bootstrap {ep.host}:{ep.port}")
    # 1. a pending member across the deletion
    group = f"kc-conf-{uuid.uuid4().hex[:8]}"
    where = await coordinator(codec, ep, group)
    conn = await Connection.open(where["Host"], where["Port"], codec=codec, client_id="kc-member-1")
    try:
        first = await first_join(conn, group)
        print(
            f"  a new member's first JoinGroup v5: ErrorCode {first['ErrorCode']} (79: MEMBER_ID_REQUIRED)"
        )
        print(f"    {await topic_made_and_deleted(codec, target)}")
        second = (await conn.request(JOIN, 5, join_body(group, first["MemberId"], META))).body
        print(
            f"    its JoinGroup with that id after the deletion: ErrorCode {second['ErrorCode']} (0: joined, 25: UNKNOWN_MEMBER_ID)"
        )
    finally:
        await conn.close()
    # 2. and 3. an Empty group without and with a committed offset
    for commit in (False, True):
        print(f"  an Empty group {'with' if commit else 'without'} a committed offset:")
        group, conn = await emptied_group(codec, target, ep, commit)
        try:
            print(f"    before: {await describe(conn, group)}")
            print(f"    {await topic_made_and_deleted(codec, target)}")
            print(f"    after:  {await describe(conn, group)}")
        finally:
            await conn.close()


if __name__ == "__main__":
    each_target(probe)
