"""DescribeUserScramCredentials (50): each user's SCRAM mechanisms and iterations, never a
salt or key (``security/scram.py``), from this node's view of the cluster metadata and the
users its ``security`` settings configure. DESCRIBE on CLUSTER is required
(``security/authorize.py``)."""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import NodeView
from reference_impl.security import scram
from reference_impl.security.settings import SecuritySettings

ROLES = ("broker", "controller")


def api(node: NodeView) -> Api:
    settings = SecuritySettings.of(node.config)
    configured = dict.fromkeys(settings.users, settings.scram_iterations)

    async def handler(ctx: RequestContext, body: dict) -> dict[str, Any]:
        results = scram.describe(scram.scram_view(node), configured, body)
        return {"ErrorCode": 0, "ErrorMessage": None, "Results": results}

    return Api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, handler)
