"""UpdateMetadata (6), from the controller: the broker's metadata cache becomes what it says."""

from __future__ import annotations

from conformance.protocol import ApiKey
from reference_impl.handlers.common import controller_request_error
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView


def api(node: BrokerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        error = controller_request_error(node, ctx, body, broker_epoch_since=5)
        if error:
            return {"ErrorCode": error}
        node.metadata_cache.apply_update_metadata(body, ctx.version)
        node.metadata_applied()
        return {"ErrorCode": 0}

    return Api(ApiKey.UPDATE_METADATA, handle)
