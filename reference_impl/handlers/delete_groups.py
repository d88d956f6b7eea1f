"""DeleteGroups (42): remove Empty groups and their committed offsets (tombstones).

GROUP_ID_NOT_FOUND for unknown groups, NON_EMPTY_GROUP while a group has members. v3 (Kafka
4.4.0) adds an ErrorMessage to each result, left null (Kafka's words are its own; clients act on
the code).
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.handlers.group_common import group_allowed, groups
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView


def api(node: BrokerView) -> Api:
    service = groups(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        names = list(dict.fromkeys(body["GroupsNames"]))
        denied = {g for g in names if not group_allowed(node, ctx, "DELETE", g)}
        results: dict[str, int] = dict.fromkeys(denied, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        permitted = [g for g in names if g not in denied]
        if permitted:
            results.update(await service.delete(permitted))
        return {
            "ThrottleTimeMs": 0,
            "Results": [{"GroupId": g, "ErrorCode": int(results[g])} for g in names],
        }

    return Api(ApiKey.DELETE_GROUPS, handle)
