"""DescribeShareGroupOffsets (90, KIP-932): the share-partition start offsets of share groups.

Per group: DESCRIBE on the GROUP (else GROUP_AUTHORIZATION_FAILED); the share group type
(``groups/share.py``, ``describe_offsets``) answers each partition asked, or with Topics null
every partition the group has share state for: its start offset, -1 where the group has none (a
group that does not exist is answered without error, as Kafka 4.4.0 does). LeaderEpoch 0, as
Kafka answers it; v1's Lag -1 (the coordinator does not know the partitions' high watermarks).
Versions 0-1, as Kafka 4.4.0 advertises.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.handlers.group_common import group_allowed, groups
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

MAX_VERSION = 1


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
        return {"ThrottleTimeMs": 0, "Groups": [describe(ctx, g) for g in body["Groups"]]}

    return Api(
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        handle,
        max_version=MAX_VERSION,
        also_on=("zkBroker",),
    )
