"""DescribeAcls (29): the ACL bindings matching a filter, from this node's view of the ACLs.

A broker answers from the ACLs it learned with the metadata, the controller from its image
(``reference_impl/security/authorizer.py``). DESCRIBE on CLUSTER is required
(``security/authorize.py``). Without the ACL authorizer the answer is SECURITY_DISABLED, as
Kafka's; a filter whose pattern type is UNKNOWN is INVALID_REQUEST, one with another UNKNOWN
value (resource type, operation, permission: a code Kafka does not define) matches nothing and
is answered NONE with no resource, as Kafka 4.4.0's StandardAuthorizer answers it (the diff of
reference?security=sasl against kafka:4.4.0?security=sasl). Versions below 3 cannot express
USER resources, so those bindings are left out of their answers.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import AclPatternType, ApiKey, ErrorCode
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import NodeView
from reference_impl.security import acl
from reference_impl.security.authorizer import NodeAclAuthorizer

ROLES = ("broker", "controller")
NO_AUTHORIZER = "No Authorizer is configured on the broker"


def binding_filter(f: dict[str, Any]) -> acl.AclBindingFilter:
    """The filter of a DescribeAcls request or of one DeleteAcls filter (same field names)."""
    return acl.AclBindingFilter(
        acl.resource_type(f["ResourceTypeFilter"]),
        f["ResourceNameFilter"],
        acl.pattern_type(f["PatternTypeFilter"]),
        f["PrincipalFilter"],
        f["HostFilter"],
        acl.operation(f["Operation"]),
        acl.permission_type(f["PermissionType"]),
    )


def describe(authorizer: NodeAclAuthorizer, body: dict, version: int) -> dict[str, Any]:
    f = binding_filter(body)
    reason = f.unknown_reason()
    if reason is not None and f.pattern_type == AclPatternType.UNKNOWN:
        return {"ErrorCode": ErrorCode.INVALID_REQUEST, "ErrorMessage": reason, "Resources": []}
    if reason is not None:
        return {"ErrorCode": 0, "ErrorMessage": None, "Resources": []}
    found = [
        b
        for b in authorizer.acl.matching(f)
        if version >= 3 or b.resource_type != acl.AclResourceType.USER
    ]
    resources = [
        {
            "ResourceType": int(rtype),
            "ResourceName": name,
            "PatternType": int(ptype),
            "Acls": [
                {
                    "Principal": b.principal,
                    "Host": b.host,
                    "Operation": int(b.operation),
                    "PermissionType": int(b.permission_type),
                }
                for b in bindings
            ],
        }
        for (rtype, name, ptype), bindings in acl.group_by_resource(found)
    ]
    return {"ErrorCode": 0, "ErrorMessage": None, "Resources": resources}


def api(node: NodeView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        if not isinstance(node.authorizer, NodeAclAuthorizer):
            return {
                "ErrorCode": ErrorCode.SECURITY_DISABLED,
                "ErrorMessage": NO_AUTHORIZER,
                "Resources": [],
            }
        return describe(node.authorizer, body, ctx.version)

    return Api(ApiKey.DESCRIBE_ACLS, handle)
