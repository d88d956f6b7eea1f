"""OffsetDelete (47): remove a group's committed offsets for some partitions (KIP-496).

GROUP_ID_NOT_FOUND (top level) for a group that does not exist, NON_EMPTY_GROUP for a group of
another protocol type with members; per partition, GROUP_SUBSCRIBED_TO_TOPIC where the group's
consumers subscribe to the topic, UNKNOWN_TOPIC_OR_PARTITION for a partition the cluster does
not have, TOPIC_AUTHORIZATION_FAILED where the principal may not read the topic; NONE otherwise.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.handlers.group_common import allowed, group_allowed, groups
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView


def api(node: BrokerView) -> Api:
    service = groups(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        group_id = body["GroupId"]
        asked = [(t["Name"], p["PartitionIndex"]) for t in body["Topics"] for p in t["Partitions"]]
        results: dict[tuple[str, int], int] = {}
        if not group_allowed(node, ctx, "DELETE", group_id):
            return _answer(ErrorCode.GROUP_AUTHORIZATION_FAILED, [])
        wanted = []
        for tp in dict.fromkeys(asked):
            if not allowed(node, ctx, "READ", ("TOPIC", tp[0])):
                results[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not service.partition_exists(*tp):
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted.append(tp)
        error, deleted = await service.delete_offsets(group_id, wanted)
        if error:
            return _answer(error, [])
        results.update(deleted)
        topics = [t["Name"] for t in body["Topics"]]
        return _answer(ErrorCode.NONE, [(tp, results[tp]) for tp in dict.fromkeys(asked)], topics)

    return Api(ApiKey.OFFSET_DELETE, handle)


def _answer(
    error: int, partitions: list[tuple[tuple[str, int], int]], topics: list[str] | None = None
) -> dict:
    """Every topic of ``topics`` is answered, one asked for with no partition too (as Kafka)."""
    by_topic: dict[str, list[dict]] = {t: [] for t in topics or []}
    for (topic, index), code in partitions:
        by_topic.setdefault(topic, []).append({"PartitionIndex": index, "ErrorCode": int(code)})
    return {
        "ErrorCode": int(error),
        "ThrottleTimeMs": 0,
        "Topics": [{"Name": t, "Partitions": ps} for t, ps in by_topic.items()],
    }
