"""Which admin mutations brokers forward to the controller (KIP-590), and the Api a handler
serves for one: a leaf both roles import (the handlers, the Envelope handler, the authorizer),
so that the controller's process never loads the broker package. How a broker forwards (the
Envelope round trip) is the broker's ``broker/forwarding.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from conformance.protocol import ApiKey
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView, NodeView

#: the APIs a broker forwards (KIP-590 plus topic creation, deletion and partitions)
FORWARDED = frozenset(
    {
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_TOPICS,
        ApiKey.CREATE_ACLS,
        ApiKey.DELETE_ACLS,
        ApiKey.ALTER_CONFIGS,
        ApiKey.CREATE_PARTITIONS,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        ApiKey.ALTER_CLIENT_QUOTAS,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        ApiKey.UPDATE_FEATURES,
    }
)


def forwarded_api(node: BrokerView, api_key: int) -> Api:
    """A broker's Api for a mutation it forwards to the controller (``node.forwarder``)."""

    async def forward(ctx: RequestContext, body: dict) -> dict:
        return await node.forwarder.forward(ctx, body)

    return Api(api_key, forward)


def mutation_api(node: NodeView, api_key: int, serve: Callable[..., Awaitable[dict]]) -> Api:
    """A forwarded mutation's Api: brokers forward it, the controller ``serve``s it."""
    if node.role == "broker":
        return forwarded_api(node, api_key)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        return await serve(node, ctx, body)

    return Api(api_key, handle)
