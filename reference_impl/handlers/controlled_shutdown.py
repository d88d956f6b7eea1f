"""ControlledShutdown (7), on the controller listener: ZooKeeper-era form of WantShutDown.

The broker becomes Stopping and its leaderships move to other Online ISR members; the answer
lists the partitions it still leads (those without another Online ISR member).
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import ControllerView
from reference_impl.security_hooks import CLUSTER, CLUSTER_ACTION

ROLES = ("controller",)


def api(node: ControllerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        if not node.authorize(ctx.session, CLUSTER_ACTION, CLUSTER):
            return {"ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "RemainingPartitions": []}
        remaining = await node.lifecycle.controlled_shutdown(body["BrokerId"], body["BrokerEpoch"])
        return {
            "ErrorCode": 0,
            "RemainingPartitions": [{"TopicName": t, "PartitionIndex": p} for t, p in remaining],
        }

    return Api(ApiKey.CONTROLLED_SHUTDOWN, handle)
