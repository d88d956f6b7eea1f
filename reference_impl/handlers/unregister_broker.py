"""UnregisterBroker (64), on the controller listener: a broker's registration is removed."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import ControllerView
from reference_impl.security_hooks import CLUSTER

ROLES = ("controller",)


def api(node: ControllerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        if not node.authorize(ctx.session, "ALTER", CLUSTER):
            return {"ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        await node.lifecycle.unregister(body["BrokerId"])
        return {"ErrorCode": 0}

    return Api(ApiKey.UNREGISTER_BROKER, handle)
