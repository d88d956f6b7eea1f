"""BrokerHeartbeat (63), on the controller listener: liveness, catching up, fencing, shutdown.

Versions 0-2, Kafka 4.4.0's range. The reference models no log directories (a broker's log is
one directory, never failed or cordoned), so v1's OfflineLogDirs and v2's CordonedLogDirs
(KIP-1066: directories a broker takes no new replicas into) are read and not acted on; every
broker stays a placement candidate.
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
            return {"ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        answer = await node.lifecycle.heartbeat(
            body["BrokerId"],
            body["BrokerEpoch"],
            body["CurrentMetadataOffset"],
            body["WantFence"],
            body["WantShutDown"],
        )
        return {"ErrorCode": 0, **answer}

    return Api(ApiKey.BROKER_HEARTBEAT, handle)
