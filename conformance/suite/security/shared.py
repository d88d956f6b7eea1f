"""ACL bodies several SECURITY test modules (and the reference's own tests) build: a binding of
CreateAcls, a filter of DescribeAcls and DeleteAcls."""

from __future__ import annotations

from conformance.protocol import AclOperation, AclPatternType, AclPermissionType, AclResourceType


def binding(
    name: str,
    principal: str,
    op: int,
    *,
    rtype: int = AclResourceType.TOPIC,
    pattern: int = AclPatternType.LITERAL,
    permission: int = AclPermissionType.ALLOW,
) -> dict:
    """A CreateAcls creation: ``principal`` from any host, ``op`` on the resource pattern."""
    return {
        "ResourceType": rtype,
        "ResourceName": name,
        "ResourcePatternType": pattern,
        "Principal": principal,
        "Host": "*",
        "Operation": op,
        "PermissionType": permission,
    }


def acl_filter(
    name: str | None = None,
    principal: str | None = None,
    pattern: int = AclPatternType.ANY,
    rtype: int = AclResourceType.ANY,
) -> dict:
    """A DescribeAcls body (a DeleteAcls filter): any operation, permission and host."""
    return {
        "ResourceTypeFilter": rtype,
        "ResourceNameFilter": name,
        "PatternTypeFilter": pattern,
        "PrincipalFilter": principal,
        "HostFilter": None,
        "Operation": AclOperation.ANY,
        "PermissionType": AclPermissionType.ANY,
    }
