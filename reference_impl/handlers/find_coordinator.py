"""FindCoordinator (10): which broker coordinates a group (v4+: several keys at once).

A group's coordinator is the leader of its ``__consumer_offsets`` partition; while that topic
does not exist yet it is created through the controller and the answer is
COORDINATOR_NOT_AVAILABLE (clients retry). The reference has no transaction coordinator:
transaction keys are answered COORDINATOR_NOT_AVAILABLE, unknown key types INVALID_REQUEST.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.groups.service import Coordinator
from reference_impl.handlers.group_common import (
    group_allowed,
    groups,
)
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

GROUP, TRANSACTION = 0, 1

#: Kafka's default messages for the errors this answers with
MESSAGES = {
    0: "NONE",
    int(ErrorCode.COORDINATOR_NOT_AVAILABLE): "The coordinator is not available.",
    int(ErrorCode.INVALID_REQUEST): "This most likely occurs because of a request being malformed "
    "by the client library or the message was sent to an incompatible broker. See the broker "
    "logs for more details.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
}


def api(node: BrokerView) -> Api:
    service = groups(node)

    async def locate(ctx: RequestContext, key_type: int, key: str) -> Coordinator:
        if key_type == TRANSACTION:
            return Coordinator(
                int(ErrorCode.COORDINATOR_NOT_AVAILABLE),
                message="the reference cluster has no transaction coordinator",
            )
        if key_type != GROUP:
            return Coordinator(
                int(ErrorCode.INVALID_REQUEST), message=f"unknown key type {key_type}"
            )
        if not group_allowed(node, ctx, "DESCRIBE", key):
            return Coordinator(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return await service.find(key, ctx.listener.name)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        v = ctx.version
        key_type = body["KeyType"] if v >= 1 else GROUP
        if v >= 4:
            coordinators = []
            for key in body["CoordinatorKeys"]:
                c = await locate(ctx, key_type, key)
                coordinators.append({"Key": key, **_fields(c)})
            return {"ThrottleTimeMs": 0, "Coordinators": coordinators}
        c = await locate(ctx, key_type, body["Key"])
        return {"ThrottleTimeMs": 0, **_fields(c)}

    return Api(ApiKey.FIND_COORDINATOR, handle)


def _fields(c: Coordinator) -> dict:
    if c.error:
        return {
            "NodeId": -1,
            "Host": "",
            "Port": -1,
            "ErrorCode": c.error,
            "ErrorMessage": c.message or MESSAGES.get(c.error),
        }
    return {
        "NodeId": c.node_id,
        "Host": c.host,
        "Port": c.port,
        "ErrorCode": 0,
        "ErrorMessage": MESSAGES[0],
    }
