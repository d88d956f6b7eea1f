# ruff: noqa: E501 - the printed lines say what Kafka answers, in full
"""Hand confirmation, on the wire, of why Apache Kafka left the suite's first JoinGroup rounds
unanswered (GROUPS.R21 FAIL on 3.9.1, masking R3-R20 and OFFSETS.R3/R6): raw requests with the
project's codec and wire client, one connection per member, no suite code, against released
brokers started as the kafka target starts them (group.initial.rebalance.delay.ms=0).

A new member asks for its id (MEMBER_ID_REQUIRED), then joins with it, protocol type "consumer":
once with member metadata that is not a consumer subscription (what the suite sent: free text),
once with ConsumerProtocolSubscription v0 bytes (what Kafka's consumers send, and the suite now).
Before that, the first JoinGroup right after the first FindCoordinator shows the moment when a
KRaft broker named coordinator still answers NOT_COORDINATOR (16) or COORDINATOR_LOAD_IN_PROGRESS (14).
Last, DescribeGroups of a group that does not exist at every version both sides know (GROUPS.R13).

Usage: python -m confirmations.kafka_groups 3.9.1 '3.9.1?store=zookeeper' 4.0.2 4.4.0
"""

import asyncio
import struct
import time
import uuid

from confirmations.launch import each_target
from conformance.client.wire import Connection
from conformance.protocol.codec import Codec

FIND_COORDINATOR, JOIN_GROUP, DESCRIBE_GROUPS = 10, 11, 15
TRANSIENT = (14, 15, 16)
WAIT = 12.0


def subscription_v0(user_data: bytes) -> bytes:
    """ConsumerProtocolSubscription v0: version 0, no topics, the user data."""
    return struct.pack(">hi", 0, 0) + struct.pack(">i", len(user_data)) + user_data


async def coordinator(codec, ep, group):
    """FindCoordinator v4 until it names a broker (it makes the offsets topic first)."""
    conn = await Connection.open(ep.host, ep.port, codec=codec)
    try:
        for _ in range(150):
            got = (
                await conn.request(FIND_COORDINATOR, 4, {"KeyType": 0, "CoordinatorKeys": [group]})
            ).body["Coordinators"][0]
            if got["ErrorCode"] == 0:
                return got
            await asyncio.sleep(0.2)
        raise RuntimeError(f"no coordinator for {group}: {got}")
    finally:
        await conn.close()


def join_body(group, member_id, metadata):
    return {
        "GroupId": group,
        "SessionTimeoutMs": 10000,
        "RebalanceTimeoutMs": 4000,
        "MemberId": member_id,
        "GroupInstanceId": None,
        "ProtocolType": "consumer",
        "Protocols": [{"Name": "range", "Metadata": metadata}],
        "Reason": None,
    }


async def one_round(codec, ep, metadata, label, *, first_answers=None):
    """A new member's two JoinGroups; prints what each got and how long the second took."""
    group = f"kc-conf-{uuid.uuid4().hex[:8]}"
    where = await coordinator(codec, ep, group)
    conn = await Connection.open(where["Host"], where["Port"], codec=codec, client_id="kc-member-1")
    try:
        for _ in range(150):
            first = (await conn.request(JOIN_GROUP, 9, join_body(group, "", metadata))).body
            if first_answers is not None:
                first_answers.append(first["ErrorCode"])
            if first["ErrorCode"] not in TRANSIENT:
                break
            await asyncio.sleep(0.2)
        start = time.monotonic()
        try:
            second = (
                await conn.request(
                    JOIN_GROUP, 9, join_body(group, first["MemberId"], metadata), timeout=WAIT
                )
            ).body
            got = f"ErrorCode {second['ErrorCode']}, generation {second['GenerationId']}, after {time.monotonic() - start:.2f} s"
        except TimeoutError:
            got = f"no answer within {WAIT:.0f} s (rebalance timeout 4000 ms)"
        print(
            f"  {label}:\n    first JoinGroup v9: ErrorCode {first['ErrorCode']}; with the id it gave: {got}"
        )
    finally:
        await conn.close()


async def probe(target):
    codec = Codec.from_specs().strict()
    ep = target.bootstrap[0]
    print(f"Apache Kafka {target.version} ({target.store}), bootstrap {ep.host}:{ep.port}")
    answers: list[int] = []
    await one_round(
        codec,
        ep,
        subscription_v0(b"subscription of kc-member-1"),
        "the cluster's first group, consumer subscription v0 (control)",
        first_answers=answers,
    )
    print(f"    first JoinGroup's answers while the coordinator settled, in order: {answers}")
    await one_round(
        codec,
        ep,
        b"subscription of kc-member-1",
        "member metadata b'subscription of kc-member-1' (not a consumer subscription)",
    )
    await one_round(
        codec,
        ep,
        subscription_v0(b"subscription of kc-member-1"),
        "the same text as the user data of a ConsumerProtocolSubscription v0",
    )
    await describe_absent(codec, ep)


async def describe_absent(codec, ep):
    """DescribeGroups of a group nobody made, at each version advertised and in our specs."""
    group = f"kc-conf-absent-{uuid.uuid4().hex[:8]}"
    where = await coordinator(codec, ep, group)
    conn = await Connection.open(where["Host"], where["Port"], codec=codec)
    try:
        lo, hi = (await conn.api_versions())[DESCRIBE_GROUPS]
        ours = codec.message(DESCRIBE_GROUPS, "request").valid_versions
        print(
            f"  DescribeGroups of a group that does not exist (advertised v{lo}-{hi}, our specs v{ours.lo}-{ours.hi}):"
        )
        for v in range(lo, min(hi, ours.hi) + 1):
            got = (
                await conn.request(
                    DESCRIBE_GROUPS, v, {"Groups": [group], "IncludeAuthorizedOperations": False}
                )
            ).body["Groups"][0]
            print(
                f"    v{v}: ErrorCode {got['ErrorCode']}, state {got['GroupState']!r}, message {got.get('ErrorMessage')!r}"
            )
    finally:
        await conn.close()


if __name__ == "__main__":
    each_target(probe)
