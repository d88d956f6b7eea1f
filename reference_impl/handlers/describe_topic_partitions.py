"""DescribeTopicPartitions (75, KIP-966): a topic's partitions from the broker's metadata cache,
paginated, as Kafka 4.4.0 answers them (diff and a probe on the wire, issue 37).

The topics asked for, sorted by name (none asked: every topic the principal may DESCRIBE, the
others left out; asked for and not allowed: TOPIC_AUTHORIZATION_FAILED; unknown:
UNKNOWN_TOPIC_OR_PARTITION). At most ResponsePartitionLimit partitions (at least 1, at most the
broker's 2000) from the Cursor on; where the limit stops the answer, NextCursor names the next
partition (the next topic's first when the limit ends with a topic, none after the last). A
Cursor with a negative partition refuses the request (INVALID_REQUEST on each topic asked, none
when all are asked); a cursor topic that does not exist only starts the list after its name.
Each topic answered (an unknown one too) carries its authorized operations. The reference keeps
no eligible leader replicas (KIP-966's ELR is off, as Kafka's default): EligibleLeaderReplicas
and LastKnownElr are empty. Its spec exposes it on KRaft brokers' "broker" listener; the
reference's brokers add their "zkBroker" type.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import AUTHORIZED_OPERATIONS_UNSET, ApiKey, ErrorCode
from conformance.protocol.internal_topics import INTERNAL_TOPICS
from conformance.protocol.spec import ZERO_UUID
from reference_impl.handlers.common import TOPIC_OPERATIONS, authorized_operations
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

#: Kafka's max.request.partition.size.limit default
PARTITION_LIMIT = 2000


def api(node: BrokerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        return describe(node, ctx, body)

    return Api(ApiKey.DESCRIBE_TOPIC_PARTITIONS, handle, also_on=("zkBroker",))


def _topic(code: int, name: str) -> dict[str, Any]:
    return {
        "ErrorCode": int(code),
        "Name": name,
        "TopicId": ZERO_UUID,
        "IsInternal": False,
        "Partitions": [],
        "TopicAuthorizedOperations": AUTHORIZED_OPERATIONS_UNSET,
    }


def describe(node: BrokerView, ctx: RequestContext, body: dict) -> dict:
    cache = node.metadata_cache
    names = sorted({t["Name"] for t in body["Topics"]})
    every = not names
    if every:
        names = sorted(cache.topics)
    cursor = body["Cursor"]
    if cursor is not None and cursor["PartitionIndex"] < 0:
        invalid = [_topic(ErrorCode.INVALID_REQUEST, t["Name"]) for t in body["Topics"]]
        return {"ThrottleTimeMs": 0, "Topics": invalid, "NextCursor": None}
    allowed = [n for n in names if node.authorize(ctx.session, "DESCRIBE", ("TOPIC", n))]
    refused = [] if every else [n for n in names if n not in allowed]
    if cursor is not None:
        allowed = [n for n in allowed if n >= cursor["TopicName"]]
    left = max(min(PARTITION_LIMIT, body["ResponsePartitionLimit"]), 1)

    def operations(name: str) -> int:
        return authorized_operations(node, ctx.session, ("TOPIC", name), TOPIC_OPERATIONS)

    topics, next_cursor = [], None
    listener = ctx.listener.name
    for name in allowed:
        info = cache.topics.get(name)
        if info is None:
            if not every:
                unknown = _topic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
                unknown["TopicAuthorizedOperations"] = operations(name)
                topics.append(unknown)
            continue
        start = cursor["PartitionIndex"] if cursor and cursor["TopicName"] == name else 0
        indexes = [i for i in sorted(info.partitions) if i >= start]
        if len(indexes) > left:
            next_cursor = {"TopicName": name, "PartitionIndex": indexes[left]}
            indexes = indexes[:left]
        entry = {
            "ErrorCode": 0,
            "Name": name,
            "TopicId": info.topic_id,
            "IsInternal": name in INTERNAL_TOPICS,
            "Partitions": [_partition(node, i, info.partitions[i], listener) for i in indexes],
            "TopicAuthorizedOperations": operations(name),
        }
        topics.append(entry)
        left -= len(indexes)
        if next_cursor is not None:
            break
        if left == 0:
            following = allowed[allowed.index(name) + 1 :]
            if following:
                next_cursor = {"TopicName": following[0], "PartitionIndex": 0}
            break
    topics.extend(_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, n) for n in refused)
    return {"ThrottleTimeMs": 0, "Topics": topics, "NextCursor": next_cursor}


def _partition(node: BrokerView, index: int, p: Any, listener: str) -> dict[str, Any]:
    cache = node.metadata_cache
    code, leader = 0, p.leader
    if not cache.alive(leader):
        code, leader = ErrorCode.LEADER_NOT_AVAILABLE, -1
    elif cache.endpoint(leader, listener) is None:
        code, leader = ErrorCode.LISTENER_NOT_FOUND, -1
    return {
        "ErrorCode": int(code),
        "PartitionIndex": index,
        "LeaderId": leader,
        "LeaderEpoch": p.leader_epoch,
        "ReplicaNodes": list(p.replicas),
        "IsrNodes": list(p.isr),
        "EligibleLeaderReplicas": [],
        "LastKnownElr": [],
        "OfflineReplicas": [b for b in p.replicas if not cache.alive(b)],
    }
