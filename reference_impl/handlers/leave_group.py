"""LeaveGroup (13): members leave (v3+: several, also by group instance id alone).

Before v3 the one member's error is the response's ErrorCode, as Kafka folds it.
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
        if v >= 3:
            leaving = [(m["MemberId"], m["GroupInstanceId"]) for m in body["Members"]]
        else:
            leaving = [(body["MemberId"], None)]
        top: int
        errors: list[int]
        if not group_allowed(node, ctx, "READ", body["GroupId"]):
            top, errors = ErrorCode.GROUP_AUTHORIZATION_FAILED, []
        else:
            top, errors = service.coordinator.classic.leave_group(body["GroupId"], leaving)
        if v < 3:
            folded = top or next((e for e in errors if e), 0)
            return {"ThrottleTimeMs": 0, "ErrorCode": int(folded), "Members": []}
        members = [
            {"MemberId": m, "GroupInstanceId": instance, "ErrorCode": int(e)}
            for (m, instance), e in zip(leaving, errors, strict=False)
        ]
        return {"ThrottleTimeMs": 0, "ErrorCode": int(top), "Members": members}

    return Api(ApiKey.LEAVE_GROUP, handle)
