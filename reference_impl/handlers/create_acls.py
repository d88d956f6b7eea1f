"""CreateAcls (30): new ACL bindings, written by the controller as metadata records.

A broker forwards the request to the controller (KIP-590); the controller checks ALTER on
CLUSTER (``security/authorize.py``) as the principal the Envelope carries, validates each
creation as Kafka does (INVALID_REQUEST with the reason), commits one ``acl`` record per new
binding (an existing binding is a success that writes nothing), and answers once the brokers
have the change or ``PROPAGATION_WAIT_MS`` has passed. Without the ACL authorizer every
creation is answered SECURITY_DISABLED.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.forwarded import forwarded_api
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import ControllerView, NodeView, is_broker
from reference_impl.security import acl
from reference_impl.security.authorizer import NodeAclAuthorizer

ROLES = ("broker", "controller")
NO_AUTHORIZER = "No Authorizer is configured on the broker"
#: how long an ACL mutation waits for the brokers to acknowledge it before answering
PROPAGATION_WAIT_MS = 5000


def binding(c: dict[str, Any]) -> acl.AclBinding:
    return acl.AclBinding(
        acl.resource_type(c["ResourceType"]),
        c["ResourceName"],
        acl.pattern_type(c["ResourcePatternType"]),
        c["Principal"],
        c["Host"],
        acl.operation(c["Operation"]),
        acl.permission_type(c["PermissionType"]),
    )


async def create(node: ControllerView, body: dict) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    new: list[dict[str, Any]] = []
    for c in body["Creations"]:
        b = binding(c)
        reason = b.invalid_reason()
        if reason is not None:
            results.append({"ErrorCode": ErrorCode.INVALID_REQUEST, "ErrorMessage": reason})
            continue
        results.append({"ErrorCode": 0, "ErrorMessage": None})
        if b.to_dict() not in new:
            new.append(b.to_dict())

    def records(image: Any) -> list[dict[str, Any]]:
        return [{"type": "acl", "binding": d} for d in new if d not in image.acls]

    offset = await node.commit(records)
    await node.wait_propagated(offset, PROPAGATION_WAIT_MS)
    return {"Results": results}


def mutation_api(node: NodeView, key: int, serve: Any, disabled: Any) -> Api:
    """A broker forwards the ACL mutation ``key``; the controller ``serve``s it, or answers
    ``disabled(body)`` without the ACL authorizer."""
    if is_broker(node):
        return forwarded_api(node, key)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        if not isinstance(node.authorizer, NodeAclAuthorizer):
            return disabled(body)
        return await serve(node, body)

    return Api(key, handle)


def api(node: NodeView) -> Api:
    error = {"ErrorCode": ErrorCode.SECURITY_DISABLED, "ErrorMessage": NO_AUTHORIZER}
    return mutation_api(
        node,
        ApiKey.CREATE_ACLS,
        create,
        lambda body: {"Results": [error for _ in body["Creations"]]},
    )
