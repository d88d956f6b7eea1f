"""BrokerRegistration (62), on the controller listener: a broker joins and gets its epoch.

Requires ClusterAction on CLUSTER (broker principals). The KIP-536 start time travels as the
reference's tagged field (``extensions.START_TIME_TAG``); without it the start time is 0.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl import extensions
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import ControllerView
from reference_impl.security_hooks import CLUSTER, CLUSTER_ACTION

ROLES = ("controller",)
PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


def api(node: ControllerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        if not node.authorize(ctx.session, CLUSTER_ACTION, CLUSTER):
            return {"ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        listeners = [
            {
                "name": lst["Name"],
                "host": lst["Host"],
                "port": lst["Port"],
                "security_protocol": PROTOCOLS.get(lst["SecurityProtocol"], "PLAINTEXT"),
            }
            for lst in body["Listeners"]
        ]
        epoch = await node.lifecycle.register(
            body["BrokerId"],
            body["ClusterId"],
            str(body["IncarnationId"]),
            listeners,
            body["Rack"],
            extensions.start_time(body),
        )
        return {"ErrorCode": 0, "BrokerEpoch": epoch}

    return Api(ApiKey.BROKER_REGISTRATION, handle)
