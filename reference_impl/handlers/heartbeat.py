"""Heartbeat (12): a member is alive; REBALANCE_IN_PROGRESS tells it to rejoin."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.handlers.group_common import group_allowed, groups
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView


def api(node: BrokerView) -> Api:
    service = groups(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        error: int
        if not group_allowed(node, ctx, "READ", body["GroupId"]):
            error = ErrorCode.GROUP_AUTHORIZATION_FAILED
        else:
            error = service.coordinator.classic.heartbeat(
                body["GroupId"],
                body["GenerationId"],
                body["MemberId"],
                body["GroupInstanceId"] if ctx.version >= 3 else None,
            )
        return {"ThrottleTimeMs": 0, "ErrorCode": int(error)}

    return Api(ApiKey.HEARTBEAT, handle)
