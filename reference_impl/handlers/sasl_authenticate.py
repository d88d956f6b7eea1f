"""SaslAuthenticate (36): the tokens of a SASL exchange (``reference_impl/security/sasl.py``)."""

from __future__ import annotations

from typing import Any

from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import NodeView
from reference_impl.security import sasl

ROLES = ("broker", "controller")


def api(node: NodeView) -> Api:
    async def handler(ctx: RequestContext, body: dict) -> Any:
        return sasl.authenticate(ctx.session, body, ctx.version)

    return Api(36, handler)
