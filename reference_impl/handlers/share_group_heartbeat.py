"""ShareGroupHeartbeat (76): a member of a KIP-932 share group joins, heartbeats, leaves.

The coordinator's share group type (``groups/share.py``) does the work; here: READ on the GROUP
(else GROUP_AUTHORIZATION_FAILED), the request's fields, and the answer's assignment by topic
id. Version 1 only, as Kafka 4.4.0 advertises (v0 was the early-access protocol of 4.0).
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.groups.modern import HeartbeatResult
from reference_impl.groups.share import ShareHeartbeatRequest
from reference_impl.handlers.group_common import client_host, client_id, group_allowed, groups
from reference_impl.handlers.modern_groups import heartbeat_answer
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

MIN_VERSION = 1
MAX_VERSION = 1


def api(node: BrokerView) -> Api:
    service = groups(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        if not group_allowed(node, ctx, "READ", body["GroupId"]):
            return heartbeat_answer(HeartbeatResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        r = await service.share_heartbeat(
            ShareHeartbeatRequest(
                group_id=body["GroupId"],
                member_id=body["MemberId"],
                member_epoch=body["MemberEpoch"],
                rack_id=body["RackId"],
                subscribed_topic_names=body["SubscribedTopicNames"],
                client_id=client_id(ctx),
                client_host=client_host(ctx),
            )
        )
        return heartbeat_answer(r)

    return Api(
        ApiKey.SHARE_GROUP_HEARTBEAT,
        handle,
        min_version=MIN_VERSION,
        max_version=MAX_VERSION,
        also_on=("zkBroker",),
    )
