"""DeleteShareGroupOffsets (92, KIP-932): an empty share group forgets topics' share state.

DELETE on the GROUP (else GROUP_AUTHORIZATION_FAILED); the share group type
(``groups/share.py``, ``delete_offsets``): GROUP_ID_NOT_FOUND ("Group G not found.") for a group
that does not exist, NON_EMPTY_GROUP ("The group is not empty.") while it has members, else each
topic's state is deleted (UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist) and the
deletion written before the answer. Version 0, as Kafka 4.4.0 advertises.
"""

from __future__ import annotations

import asyncio

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.spec import ZERO_UUID
from reference_impl.handlers.alter_share_group_offsets import NOT_HOSTED
from reference_impl.handlers.group_common import group_allowed, groups
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

MAX_VERSION = 0


def api(node: BrokerView) -> Api:
    service = groups(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        answer: dict = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "Responses": []}
        if not group_allowed(node, ctx, "DELETE", body["GroupId"]):
            return {**answer, "ErrorCode": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)}
        fut: asyncio.Future = asyncio.get_running_loop().create_future()

        def done(*result: object) -> None:
            if not fut.done():
                fut.set_result(result)

        service.coordinator.share.delete_offsets(
            body["GroupId"],
            [t["TopicName"] for t in body["Topics"]],
            done,
        )
        error, message, results = await fut
        if error:
            return {**answer, "ErrorCode": int(error), "ErrorMessage": message}
        ids = {name: tid for tid, name in node.metadata_cache.topic_ids.items()}
        answer["Responses"] = [
            {
                "TopicName": name,
                "TopicId": ids.get(name, ZERO_UUID),
                "ErrorCode": int(e),
                "ErrorMessage": NOT_HOSTED if e else None,
            }
            for name, e in results.items()
        ]
        return answer

    return Api(
        ApiKey.DELETE_SHARE_GROUP_OFFSETS, handle, max_version=MAX_VERSION, also_on=("zkBroker",)
    )
