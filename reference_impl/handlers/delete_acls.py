"""DeleteAcls (31): remove the ACL bindings matching each filter, on the controller.

A broker forwards the request to the controller (KIP-590); the controller checks ALTER on
CLUSTER (``security/authorize.py``) as the embedded principal. Each filter's result lists every
binding it matched, as Kafka's controller does (a binding matched by two filters is listed by
both and removed once); a filter holding UNKNOWN values is INVALID_REQUEST. One ``remove_acl``
record per removed binding; the answer waits for the brokers as CreateAcls does. Without the
ACL authorizer every filter is answered SECURITY_DISABLED.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.handlers.create_acls import NO_AUTHORIZER, PROPAGATION_WAIT_MS, mutation_api
from reference_impl.handlers.describe_acls import binding_filter
from reference_impl.net.listener import Api
from reference_impl.roles import ControllerView, NodeView
from reference_impl.security import acl

ROLES = ("broker", "controller")


def _matching_entry(b: acl.AclBinding) -> dict[str, Any]:
    return {
        "ErrorCode": 0,
        "ErrorMessage": None,
        "ResourceType": int(b.resource_type),
        "ResourceName": b.resource_name,
        "PatternType": int(b.pattern_type),
        "Principal": b.principal,
        "Host": b.host,
        "Operation": int(b.operation),
        "PermissionType": int(b.permission_type),
    }


async def delete(node: ControllerView, body: dict) -> dict[str, Any]:
    filters = [binding_filter(f) for f in body["Filters"]]
    results: list[dict[str, Any]] = []

    def records(image: Any) -> list[dict[str, Any]]:
        results.clear()
        bindings = [acl.AclBinding.from_dict(d) for d in image.acls]
        removed: list[dict[str, Any]] = []
        for f in filters:
            reason = f.unknown_reason()
            if reason is not None:
                results.append(
                    {
                        "ErrorCode": ErrorCode.INVALID_REQUEST,
                        "ErrorMessage": reason,
                        "MatchingAcls": [],
                    }
                )
                continue
            matched = [b for b in bindings if f.matches(b)]
            for b in matched:
                if b.to_dict() not in removed:
                    removed.append(b.to_dict())
            results.append(
                {
                    "ErrorCode": 0,
                    "ErrorMessage": None,
                    "MatchingAcls": [_matching_entry(b) for b in matched],
                }
            )
        return [{"type": "remove_acl", "binding": d} for d in removed]

    offset = await node.commit(records)
    await node.wait_propagated(offset, PROPAGATION_WAIT_MS)
    return {"FilterResults": results}


def api(node: NodeView) -> Api:
    error = {
        "ErrorCode": ErrorCode.SECURITY_DISABLED,
        "ErrorMessage": NO_AUTHORIZER,
        "MatchingAcls": [],
    }
    return mutation_api(
        node,
        ApiKey.DELETE_ACLS,
        delete,
        lambda body: {"FilterResults": [error for _ in body["Filters"]]},
    )
