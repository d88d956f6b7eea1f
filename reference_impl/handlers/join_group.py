"""JoinGroup (11): a member (re)joins its group and waits for the rebalance to complete.

v4+ members without an id first get MEMBER_ID_REQUIRED (KIP-394); v5+ may be static
(GroupInstanceId); v0 has no rebalance timeout (the session timeout serves as one); before v7
a missing protocol name is answered as "".
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.groups.group import JoinRequest
from reference_impl.handlers.group_common import (
    client_host,
    client_id,
    group_allowed,
    groups,
)
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView


def api(node: BrokerView) -> Api:
    service = groups(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        v = ctx.version
        group_id = body["GroupId"]
        if not group_allowed(node, ctx, "READ", group_id):
            return _answer(v, ErrorCode.GROUP_AUTHORIZATION_FAILED, body["MemberId"])
        session = body["SessionTimeoutMs"]
        req = JoinRequest(
            group_id=group_id,
            member_id=body["MemberId"],
            session_timeout_ms=session,
            rebalance_timeout_ms=body["RebalanceTimeoutMs"] if v >= 1 else session,
            protocol_type=body["ProtocolType"],
            protocols=[(p["Name"], p["Metadata"]) for p in body["Protocols"]],
            group_instance_id=body["GroupInstanceId"] if v >= 5 else None,
            client_id=client_id(ctx),
            client_host=client_host(ctx),
            require_known_member_id=v >= 4,
            supports_skip_assignment=v >= 9,
            reason=body["Reason"] if v >= 8 else None,
        )
        r = await service.join(req)
        return _answer(
            v,
            r.error,
            r.member_id,
            generation=r.generation_id,
            protocol_type=r.protocol_type,
            protocol_name=r.protocol_name,
            leader=r.leader_id,
            skip=r.skip_assignment,
            members=[
                {"MemberId": m, "GroupInstanceId": instance, "Metadata": metadata}
                for m, instance, metadata in r.members
            ],
        )

    return Api(ApiKey.JOIN_GROUP, handle)


def _answer(
    v: int,
    error: int,
    member_id: str,
    *,
    generation: int = -1,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    leader: str = "",
    skip: bool = False,
    members: list[dict] | None = None,
) -> dict:
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": error,
        "GenerationId": generation,
        "ProtocolType": protocol_type,
        "ProtocolName": protocol_name if v >= 7 else (protocol_name or ""),
        "Leader": leader,
        "SkipAssignment": skip,
        "MemberId": member_id,
        "Members": members or [],
    }
