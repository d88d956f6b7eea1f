"""BrokerHeartbeat (63), on the controller listener: liveness, catching up, fencing, shutdown."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import ControllerView
from reference_impl.security_hooks import CLUSTER, CLUSTER_ACTION

ROLES = ("controller",)


def api(node: ControllerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        if not node.authorize(ctx.session, CLUSTER_ACTION, CLUSTER):
            return {"ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        answer = await node.lifecycle.heartbeat(
            body["BrokerId"],
            body["BrokerEpoch"],
            body["CurrentMetadataOffset"],
            body["WantFence"],
            body["WantShutDown"],
        )
        return {"ErrorCode": 0, **answer}

    # v2 (Kafka 4.4) reports cordoned log directories, which the reference has none of: not written
    return Api(ApiKey.BROKER_HEARTBEAT, handle, max_version=1)
