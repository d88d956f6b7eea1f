"""ReadShareGroupStateSummary (87, KIP-932): a share partition's start offset, for the group
coordinator's DescribeShareGroupOffsets.

Kafka keeps share-partition state on a share coordinator (``__share_group_state``), which
answers this broker-to-broker request. The reference keeps it where the partition is led
(``groups/share_sessions.py``), so here the partition's leader answers: StartOffset is the share
partition's current start offset (the first offset not yet acknowledged or archived), -1 where
the group has no state for it, and v1's DeliveryCompleteCount the records at or past it that are
acknowledged or archived (-1 without state); NOT_LEADER_OR_FOLLOWER where this broker does not
lead it, UNKNOWN_TOPIC_OR_PARTITION for a topic it does not know. CLUSTER_ACTION on the cluster,
else every partition CLUSTER_AUTHORIZATION_FAILED (a broker's request, as Kafka's). Versions
0-1, as Kafka 4.4.0 advertises, on the ZooKeeper store's brokers too (their coordinators ask).
"""

from __future__ import annotations

import uuid

from conformance.protocol import ApiKey, ErrorCode, KafkaError
from reference_impl.handlers.share_common import sessions
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.security_hooks import CLUSTER, CLUSTER_ACTION

MAX_VERSION = 1


def start_offsets(
    node: BrokerView, group: str, topic_id: uuid.UUID, partitions: list[int]
) -> dict[int, tuple[int, int]]:
    """partition -> (error, start offset) of the group's share partitions led here."""
    name = node.metadata_cache.topic_ids.get(topic_id)
    out: dict[int, tuple[int, int]] = {}
    for p in partitions:
        led = None if name is None else node.metadata_cache.partition(name, p)
        if led is None:
            out[p] = (int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), -1)
        elif led.leader != node.node_id:
            out[p] = (int(ErrorCode.NOT_LEADER_OR_FOLLOWER), -1)
        else:
            sp = sessions(node).partitions.get((group, topic_id, p))
            out[p] = (0, -1 if sp is None else sp.start_offset)
    return out


def delivery_state(
    node: BrokerView, group: str, topic_id: uuid.UUID, partitions: list[int]
) -> dict[int, tuple[int, int]]:
    """partition -> (delivery complete count, high watermark) of the group's share partitions
    led here that have state (the others are left out)."""
    name = node.metadata_cache.topic_ids.get(topic_id)
    out: dict[int, tuple[int, int]] = {}
    for p in partitions:
        sp = sessions(node).partitions.get((group, topic_id, p))
        led = None if name is None else node.metadata_cache.partition(name, p)
        if sp is None or name is None or led is None or led.leader != node.node_id:
            continue
        try:
            hwm = int(node.replica_manager.partition_or_error(name, p).high_watermark)
        except KafkaError:
            continue
        out[p] = (sp.delivery_complete(), hwm)
    return out


def api(node: BrokerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        allowed = node.authorize(ctx.session, CLUSTER_ACTION, CLUSTER)
        results = []
        for t in body["Topics"]:
            asked = [p["Partition"] for p in t["Partitions"]]
            found = (
                start_offsets(node, body["GroupId"], t["TopicId"], asked)
                if allowed
                else dict.fromkeys(asked, (int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), -1))
            )
            done = delivery_state(node, body["GroupId"], t["TopicId"], asked) if allowed else {}
            partitions = [
                {
                    "Partition": p,
                    "ErrorCode": error,
                    "ErrorMessage": None,
                    "StateEpoch": 0,
                    "LeaderEpoch": 0,
                    "StartOffset": start,
                    "DeliveryCompleteCount": done[p][0] if p in done else -1,
                }
                for p, (error, start) in found.items()
            ]
            results.append({"TopicId": t["TopicId"], "Partitions": partitions})
        return {"Results": results}

    return Api(
        ApiKey.READ_SHARE_GROUP_STATE_SUMMARY,
        handle,
        max_version=MAX_VERSION,
        also_on=("zkBroker",),
    )
