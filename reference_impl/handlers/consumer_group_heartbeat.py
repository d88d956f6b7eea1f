"""ConsumerGroupHeartbeat (68): a member of a KIP-848 consumer group joins, heartbeats, leaves.

The coordinator's consumer group type (``groups/consumer.py``) does the work; here: READ on the
GROUP (else GROUP_AUTHORIZATION_FAILED, as Kafka), the request's fields, and the answer's
assignment by topic id. Versions 0-1 (Kafka 4.4.0's): v1 adds SubscribedTopicRegex and requires
the member to generate its member id (KIP-1082: an empty MemberId is INVALID_REQUEST); v0 lets
the coordinator give a joining member one.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.groups.consumer import HeartbeatRequest
from reference_impl.groups.modern import HeartbeatResult
from reference_impl.handlers.group_common import client_host, client_id, group_allowed, groups
from reference_impl.handlers.modern_groups import heartbeat_answer
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

MAX_VERSION = 1


def api(node: BrokerView) -> Api:
    service = groups(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        if not group_allowed(node, ctx, "READ", body["GroupId"]):
            return heartbeat_answer(HeartbeatResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        owned = body["TopicPartitions"]
        req = HeartbeatRequest(
            group_id=body["GroupId"],
            member_id=body["MemberId"],
            member_epoch=body["MemberEpoch"],
            instance_id=body["InstanceId"],
            rack_id=body["RackId"],
            rebalance_timeout_ms=body["RebalanceTimeoutMs"],
            subscribed_topic_names=body["SubscribedTopicNames"],
            subscribed_topic_regex=body["SubscribedTopicRegex"] if ctx.version >= 1 else None,
            server_assignor=body["ServerAssignor"],
            topic_partitions=None
            if owned is None
            else [(t["TopicId"], list(t["Partitions"])) for t in owned],
            client_id=client_id(ctx),
            client_host=client_host(ctx),
            version=ctx.version,
        )
        r = await service.consumer_heartbeat(req)
        return heartbeat_answer(r)

    return Api(ApiKey.CONSUMER_GROUP_HEARTBEAT, handle, max_version=MAX_VERSION)
