"""SaslHandshake (17): the mechanism of a SASL exchange (``reference_impl/security/sasl.py``).

Only v1 is offered: v0 (raw tokens outside Kafka's framing after the handshake) is deprecated,
and clients choose v1 from ApiVersions; a v0 request is out of range and closes the connection.
"""

from __future__ import annotations

from typing import Any

from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import NodeView
from reference_impl.security import sasl
from reference_impl.security.scram import scram_view

ROLES = ("broker", "controller")


def api(node: NodeView) -> Api:
    async def handler(ctx: RequestContext, body: dict) -> Any:
        return sasl.handshake(ctx.session, body, scram_view(node))

    return Api(17, handler, min_version=1)
