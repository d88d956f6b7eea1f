"""SyncGroup (14): the leader hands in the assignment; every member waits for its share.

From v5 the protocol type and name are mandatory and must match the group's
(INCONSISTENT_GROUP_PROTOCOL otherwise), as in Kafka.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.handlers.group_common import group_allowed, groups
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView


def api(node: BrokerView) -> Api:
    service = groups(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        v = ctx.version
        ptype = body["ProtocolType"] if v >= 5 else None
        pname = body["ProtocolName"] if v >= 5 else None
        if not group_allowed(node, ctx, "READ", body["GroupId"]):
            return _answer(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if v >= 5 and (ptype is None or pname is None):
            return _answer(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        r = await service.sync(
            body["GroupId"],
            body["GenerationId"],
            body["MemberId"],
            body["GroupInstanceId"] if v >= 3 else None,
            ptype,
            pname,
            {a["MemberId"]: a["Assignment"] for a in body["Assignments"]},
        )
        return _answer(r.error, r.protocol_type, r.protocol_name, r.assignment)

    return Api(ApiKey.SYNC_GROUP, handle)


def _answer(
    error: int, ptype: str | None = None, pname: str | None = None, assignment: bytes = b""
) -> dict:
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": int(error),
        "ProtocolType": ptype,
        "ProtocolName": pname,
        "Assignment": assignment,
    }
