"""DescribeShareGroupOffsets (90, KIP-932): the share-partition start offsets of share groups.

Per group: DESCRIBE on the GROUP (else GROUP_AUTHORIZATION_FAILED); the share group type
(``groups/share.py``, ``describe_offsets``) answers each partition asked, or with Topics null
every partition the group has share state for: its start offset, -1 where the group has none (a
group that does not exist is answered without error, as Kafka 4.4.0 does). The coordinator
knows only AlterShareGroupOffsets' values: the share partitions live on their leaders, so each
leader is asked for the current start offset of those it has state for
(ReadShareGroupStateSummary, ``read_share_group_state_summary.py``; a leader that does not
answer in 5 s leaves the coordinator's value), as Kafka's coordinator asks its share
coordinator. LeaderEpoch 0, as Kafka answers it. v1's Lag (KIP-1226) is the partition's high
watermark less the start offset less the records past it acknowledged or archived (the leader's
DeliveryCompleteCount; its high watermark from ListOffsets), -1 where the leader has no state or
does not answer. Versions 0-1, as Kafka 4.4.0 advertises.
"""

from __future__ import annotations

import asyncio
import uuid

from conformance.protocol import ApiKey, ErrorCode
from reference_impl import security_hooks
from reference_impl.handlers.group_common import group_allowed, groups
from reference_impl.handlers.read_share_group_state_summary import delivery_state, start_offsets
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

MAX_VERSION = 1
#: seconds a leader has to answer ReadShareGroupStateSummary
LEADER_WAIT = 5.0
Asked = dict[uuid.UUID, list[int]]


#: ListOffsets' version for a leader's high watermark (latest, read_uncommitted)
LIST_OFFSETS_VERSION = 7
#: what a leader says of one share partition: (error, start offset, lag or -1)
Said = tuple[int, int, int]


def lag(start: int, complete: int, hwm: int) -> int:
    """The records from ``start`` to the high watermark not yet acknowledged or archived."""
    return hwm - start - complete if start >= 0 and complete >= 0 and hwm >= 0 else -1


async def leader_starts(
    node: BrokerView, leader: int, group: str, asked: Asked
) -> dict[tuple[uuid.UUID, int], Said]:
    """(topic id, partition) -> (error, start offset, lag) as ``leader`` has them ({} when it
    does not answer)."""
    if leader == node.node_id:
        out: dict[tuple[uuid.UUID, int], Said] = {}
        for tid, ps in asked.items():
            done = delivery_state(node, group, tid, ps)
            for p, (error, start) in start_offsets(node, group, tid, ps).items():
                out[(tid, p)] = (error, start, lag(start, *done.get(p, (-1, -1))))
        return out
    listener = node.config.inter_broker_listener or node.config.listeners[0].name
    ep = node.metadata_cache.endpoint(leader, listener)
    if ep is None:
        return {}
    body = {
        "GroupId": group,
        "Topics": [
            {"TopicId": tid, "Partitions": [{"Partition": p, "LeaderEpoch": -1} for p in ps]}
            for tid, ps in asked.items()
        ],
    }
    names = {tid: node.metadata_cache.topic_ids.get(tid) for tid in asked}
    latest = {
        "ReplicaId": -1,
        "IsolationLevel": 0,
        "Topics": [
            {
                "Name": names[tid],
                "Partitions": [
                    {"PartitionIndex": p, "CurrentLeaderEpoch": -1, "Timestamp": -1} for p in ps
                ],
            }
            for tid, ps in asked.items()
            if names[tid] is not None
        ],
    }
    try:
        async with asyncio.timeout(LEADER_WAIT):
            conn = await security_hooks.connect(
                ep.host, ep.port, codec=node.codec, client_id="share-offsets", timeout=LEADER_WAIT
            )
            async with conn:
                got = await conn.request(
                    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 1, body, timeout=LEADER_WAIT
                )
                ends = await conn.request(
                    ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, latest, timeout=LEADER_WAIT
                )
    except (OSError, ConnectionError, TimeoutError):
        return {}
    ids = {name: tid for tid, name in names.items()}
    hwm = {
        (ids[t["Name"]], p["PartitionIndex"]): p["Offset"] if p["ErrorCode"] == 0 else -1
        for t in ends.body["Topics"]
        for p in t["Partitions"]
    }
    return {
        (r["TopicId"], p["Partition"]): (
            p["ErrorCode"],
            p["StartOffset"],
            lag(
                p["StartOffset"],
                p["DeliveryCompleteCount"],
                hwm.get((r["TopicId"], p["Partition"]), -1),
            ),
        )
        for r in got.body["Results"]
        for p in r["Partitions"]
    }


async def from_leaders(node: BrokerView, group: str, topics: list[dict]) -> None:
    """Each answered partition's StartOffset and Lag made its leader's, where the leader has
    state."""
    by_leader: dict[int, list[tuple[uuid.UUID, dict]]] = {}
    for t in topics:
        for p in t["Partitions"]:
            led = node.metadata_cache.partition(t["TopicName"], p["PartitionIndex"])
            if led is not None and led.leader >= 0:
                by_leader.setdefault(led.leader, []).append((t["TopicId"], p))
    for leader, parts in by_leader.items():
        asked: Asked = {}
        for tid, p in parts:
            asked.setdefault(tid, []).append(p["PartitionIndex"])
        got = await leader_starts(node, leader, group, asked)
        for tid, p in parts:
            error, start, behind = got.get((tid, p["PartitionIndex"]), (-1, -1, -1))
            if error == 0 and start >= 0:
                p["StartOffset"], p["Lag"] = start, behind


def api(node: BrokerView) -> Api:
    service = groups(node)

    def describe(ctx: RequestContext, asked: dict) -> dict:
        group_id = asked["GroupId"]
        entry: dict = {"GroupId": group_id, "Topics": [], "ErrorCode": 0, "ErrorMessage": None}
        if not group_allowed(node, ctx, "DESCRIBE", group_id):
            return {**entry, "ErrorCode": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)}
        topics = asked["Topics"]
        error, message, found = service.coordinator.share.describe_offsets(
            group_id,
            None if topics is None else [(t["TopicName"], list(t["Partitions"])) for t in topics],
        )
        if error:
            return {**entry, "ErrorCode": int(error), "ErrorMessage": message}
        entry["Topics"] = [
            {
                "TopicName": t.topic,
                "TopicId": t.topic_id,
                "Partitions": [
                    {
                        "PartitionIndex": p,
                        "StartOffset": start,
                        "LeaderEpoch": 0,
                        "Lag": -1,
                        "ErrorCode": 0,
                        "ErrorMessage": None,
                    }
                    for p, start in t.start_offsets.items()
                ],
            }
            for t in found
        ]
        return entry

    async def handle(ctx: RequestContext, body: dict) -> dict:
        answers = [describe(ctx, g) for g in body["Groups"]]
        for a in answers:
            if not a["ErrorCode"]:
                await from_leaders(node, a["GroupId"], a["Topics"])
        return {"ThrottleTimeMs": 0, "Groups": answers}

    return Api(
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        handle,
        max_version=MAX_VERSION,
        also_on=("zkBroker",),
    )
