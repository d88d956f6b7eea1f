# ruff: noqa: E501 - the printed lines say what Kafka answers, in full
"""Hand confirmation, on the wire, of what Apache Kafka does when the two group protocols meet
on one group id (KIP-848's online migration, issue 38): raw requests with the project's codec
and wire client, one connection per member, no suite code, against released brokers started as
the kafka target starts them (Kafka's default group.consumer.migration.policy).

1. upgrade: a classic group of one consumer-type member (JoinGroup with a ConsumerProtocolSubscription
   v0, SyncGroup, Stable), then a ConsumerGroupHeartbeat join (epoch 0) on the same group id;
2. mixed: a consumer group of one KIP-848 member, then a classic member's JoinGroup (protocol
   type "consumer") on the same group id;
3. a non-consumer classic group (protocol type "connect"), then a ConsumerGroupHeartbeat join.

After each, what ConsumerGroupDescribe, DescribeGroups v5 and ListGroups v5 say of the group.

Usage: python -m confirmations.kafka_consumer_migration 4.4.0
"""

import asyncio
import struct
import uuid

from confirmations.kafka_groups import coordinator as find_coordinator
from confirmations.launch import each_target
from conformance.client.wire import Connection
from conformance.protocol.codec import Codec

JOIN_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS = 11, 14, 15, 16
CREATE_TOPICS, HEARTBEAT_CG, DESCRIBE_CG = 19, 68, 69
TRANSIENT = (14, 15, 16)


def subscription_v0(topics):
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


ASSIGNMENT_V0_EMPTY = struct.pack(">hii", 0, 0, -1)


async def coordinator(codec, ep, group):
    """A connection to the group's coordinator (kafka_groups' FindCoordinator look-up)."""
    where = await find_coordinator(codec, ep, group)
    return await Connection.open(where["Host"], where["Port"], codec=codec)


async def classic_join(conn, group, protocol_type, metadata):
    body = {
        "GroupId": group,
        "SessionTimeoutMs": 30000,
        "RebalanceTimeoutMs": 4000,
        "MemberId": "",
        "GroupInstanceId": None,
        "ProtocolType": protocol_type,
        "Protocols": [{"Name": "range", "Metadata": metadata}],
        "Reason": None,
    }
    answers = []
    for _ in range(100):
        got = (await conn.request(JOIN_GROUP, 9, body, timeout=15)).body
        answers.append(got["ErrorCode"])
        if got["ErrorCode"] == 79:  # MEMBER_ID_REQUIRED
            body["MemberId"] = got["MemberId"]
            continue
        if got["ErrorCode"] in TRANSIENT:
            await asyncio.sleep(0.2)
            continue
        return got, answers
    return got, answers


async def classic_sync(conn, group, joined, protocol_type):
    body = {
        "GroupId": group,
        "GenerationId": joined["GenerationId"],
        "MemberId": joined["MemberId"],
        "GroupInstanceId": None,
        "ProtocolType": protocol_type,
        "ProtocolName": "range",
        "Assignments": [{"MemberId": joined["MemberId"], "Assignment": ASSIGNMENT_V0_EMPTY}],
    }
    return (await conn.request(SYNC_GROUP, 5, body, timeout=15)).body


async def cg_join(conn, group, topic):
    body = {
        "GroupId": group,
        "MemberId": str(uuid.uuid4()),
        "MemberEpoch": 0,
        "InstanceId": None,
        "RackId": None,
        "RebalanceTimeoutMs": 10000,
        "SubscribedTopicNames": [topic],
        "SubscribedTopicRegex": None,
        "ServerAssignor": None,
        "TopicPartitions": [],
    }
    for _ in range(50):
        got = (await conn.request(HEARTBEAT_CG, 1, body, timeout=15)).body
        if got["ErrorCode"] not in TRANSIENT:
            return got
        await asyncio.sleep(0.2)
    return got


async def views(conn, group):
    cg = (
        await conn.request(
            DESCRIBE_CG, 1, {"GroupIds": [group], "IncludeAuthorizedOperations": False}
        )
    ).body["Groups"][0]
    members = [
        (m["MemberId"][:8], m["MemberEpoch"], m.get("MemberType")) for m in cg.get("Members") or []
    ]
    print(
        f"    ConsumerGroupDescribe v1: ErrorCode {cg['ErrorCode']}, state {cg['GroupState']!r}, "
        f"group epoch {cg['GroupEpoch']}, members (id, epoch, type) {members}, message {cg.get('ErrorMessage')!r}"
    )
    dg = (
        await conn.request(
            DESCRIBE_GROUPS, 5, {"Groups": [group], "IncludeAuthorizedOperations": False}
        )
    ).body["Groups"][0]
    print(
        f"    DescribeGroups v5: ErrorCode {dg['ErrorCode']}, state {dg['GroupState']!r}, "
        f"protocol type {dg['ProtocolType']!r}, {len(dg['Members'])} members"
    )
    lg = (await conn.request(LIST_GROUPS, 5, {"StatesFilter": [], "TypesFilter": []})).body
    rows = [(g["GroupState"], g["GroupType"]) for g in lg["Groups"] if g["GroupId"] == group]
    print(f"    ListGroups v5: (state, type) {rows}")


async def probe(target):
    codec = Codec.from_specs().strict()
    ep = target.bootstrap[0]
    print(f"Apache Kafka {target.version} ({target.store}), bootstrap {ep.host}:{ep.port}")
    admin = await Connection.open(ep.host, ep.port, codec=codec)
    topic = f"kc-conf-mig-{uuid.uuid4().hex[:8]}"
    body = {
        "Topics": [
            {
                "Name": topic,
                "NumPartitions": 2,
                "ReplicationFactor": 1,
                "Assignments": [],
                "Configs": [],
            }
        ],
        "TimeoutMs": 10000,
        "ValidateOnly": False,
    }
    print(
        f"  CreateTopics {topic}: {(await admin.request(CREATE_TOPICS, 5, body)).body['Topics'][0]['ErrorCode']}"
    )
    await admin.close()
    await asyncio.sleep(1)

    group = f"kc-conf-up-{uuid.uuid4().hex[:8]}"
    print(
        "  1. classic consumer-type group (one member, Stable), then a ConsumerGroupHeartbeat join:"
    )
    classic, new = await coordinator(codec, ep, group), await coordinator(codec, ep, group)
    joined, answers = await classic_join(classic, group, "consumer", subscription_v0([topic]))
    synced = await classic_sync(classic, group, joined, "consumer")
    print(
        f"    JoinGroup v9 answers {answers}, generation {joined['GenerationId']}; SyncGroup v5: ErrorCode {synced['ErrorCode']}"
    )
    got = await cg_join(new, group, topic)
    print(
        f"    ConsumerGroupHeartbeat v1 join: ErrorCode {got['ErrorCode']}, member epoch {got['MemberEpoch']}, message {got.get('ErrorMessage')!r}"
    )
    await views(new, group)
    await classic.close()
    await new.close()

    group = f"kc-conf-mixed-{uuid.uuid4().hex[:8]}"
    print("  2. consumer group (one KIP-848 member), then a classic consumer-type JoinGroup:")
    new, classic = await coordinator(codec, ep, group), await coordinator(codec, ep, group)
    got = await cg_join(new, group, topic)
    print(
        f"    ConsumerGroupHeartbeat v1 join: ErrorCode {got['ErrorCode']}, member epoch {got['MemberEpoch']}"
    )
    joined, answers = await classic_join(classic, group, "consumer", subscription_v0([topic]))
    print(
        f"    JoinGroup v9 answers {answers}: generation {joined['GenerationId']}, protocol {joined.get('ProtocolName')!r}, "
        f"leader is itself {joined['Leader'] == joined['MemberId']}, {len(joined['Members'])} members listed"
    )
    if joined["ErrorCode"] == 0:
        synced = await classic_sync(classic, group, joined, "consumer")
        print(
            f"    SyncGroup v5: ErrorCode {synced['ErrorCode']}, assignment {len(synced['Assignment'])} bytes"
        )
    await views(new, group)
    await classic.close()
    await new.close()

    group = f"kc-conf-connect-{uuid.uuid4().hex[:8]}"
    print("  3. classic group of protocol type 'connect', then a ConsumerGroupHeartbeat join:")
    classic, new = await coordinator(codec, ep, group), await coordinator(codec, ep, group)
    joined, answers = await classic_join(classic, group, "connect", b"worker")
    synced = await classic_sync(classic, group, joined, "connect")
    print(f"    JoinGroup v9 answers {answers}; SyncGroup v5: ErrorCode {synced['ErrorCode']}")
    got = await cg_join(new, group, topic)
    print(
        f"    ConsumerGroupHeartbeat v1 join: ErrorCode {got['ErrorCode']}, message {got.get('ErrorMessage')!r}"
    )
    await classic.close()
    await new.close()


if __name__ == "__main__":
    each_target(probe)
