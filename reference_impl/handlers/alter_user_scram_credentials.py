"""AlterUserScramCredentials (51): brokers forward it (KIP-590); the controller checks ALTER on
CLUSTER (``security/authorize.py``), applies Kafka's rules (``security/scram.py``) and commits
one ``scram`` / ``remove_scram`` record per accepted change, answering once the brokers have it
(a SCRAM login on any broker then meets the new credential) or after ``PROPAGATION_WAIT_MS``.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey
from reference_impl.forwarded import mutation_api
from reference_impl.handlers.create_acls import PROPAGATION_WAIT_MS
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import ControllerView, NodeView
from reference_impl.security import scram
from reference_impl.security.settings import SecuritySettings

ROLES = ("broker", "controller")


async def alter(node: ControllerView, ctx: RequestContext, body: dict) -> dict[str, Any]:
    faults = SecuritySettings.of(node.config).faults
    results: list[dict[str, Any]] = []

    def records(image: Any) -> list[dict[str, Any]]:
        answers, made = scram.alter(
            image.scram,
            body,
            checked="accept_any_credential" not in faults,
            deletes="keep_deleted_credentials" not in faults,
        )
        results[:] = answers
        return made

    offset = await node.commit(records)
    await node.wait_propagated(offset, PROPAGATION_WAIT_MS)
    return {"Results": results}


def api(node: NodeView) -> Api:
    return mutation_api(node, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, alter)
