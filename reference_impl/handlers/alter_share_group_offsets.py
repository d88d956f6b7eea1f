"""AlterShareGroupOffsets (91, KIP-932): set the start offsets of an empty share group.

READ on the GROUP (else GROUP_AUTHORIZATION_FAILED); the share group type (``groups/share.py``,
``alter_offsets``): NON_EMPTY_GROUP ("The group is not empty.") while it has members, else each
partition's start offset is set (UNKNOWN_TOPIC_OR_PARTITION for a partition that does not
exist) and written before the answer. Version 0, as Kafka 4.4.0 advertises.
"""

from __future__ import annotations

import asyncio

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.spec import ZERO_UUID
from reference_impl.handlers.group_common import group_allowed, groups
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

MAX_VERSION = 0
NOT_HOSTED = "This server does not host this topic-partition."


def api(node: BrokerView) -> Api:
    service = groups(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        answer: dict = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "Responses": []}
        if not group_allowed(node, ctx, "READ", body["GroupId"]):
            return {**answer, "ErrorCode": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)}
        fut: asyncio.Future = asyncio.get_running_loop().create_future()

        def done(*result: object) -> None:
            if not fut.done():
                fut.set_result(result)

        service.coordinator.share.alter_offsets(
            body["GroupId"],
            [
                (t["TopicName"], [(p["PartitionIndex"], p["StartOffset"]) for p in t["Partitions"]])
                for t in body["Topics"]
            ],
            done,
        )
        error, message, results = await fut
        if error:
            return {**answer, "ErrorCode": int(error), "ErrorMessage": message}
        names = {name: tid for tid, name in node.metadata_cache.topic_ids.items()}
        answer["Responses"] = [
            {
                "TopicName": name,
                "TopicId": names.get(name, ZERO_UUID),
                "Partitions": [
                    {
                        "PartitionIndex": p,
                        "ErrorCode": int(e),
                        "ErrorMessage": NOT_HOSTED if e else None,
                    }
                    for p, e in partitions.items()
                ],
            }
            for name, partitions in results.items()
        ]
        return answer

    return Api(
        ApiKey.ALTER_SHARE_GROUP_OFFSETS, handle, max_version=MAX_VERSION, also_on=("zkBroker",)
    )
