"""Kafka's ACL model and authorizer: bindings, filters, and the allow/deny decision.

The rules are those of Kafka's ``AclAuthorizer`` / ``StandardAuthorizer``:

- a binding is a resource pattern (type, name, LITERAL or PREFIXED) plus an entry (principal,
  host, operation, ALLOW or DENY);
- the bindings that apply to a resource are its LITERAL ones, the LITERAL ``*`` ones of its
  type, and the PREFIXED ones whose name starts the resource's name;
- super users are allowed everything; otherwise a DENY that matches the principal (exactly or
  ``User:*``), the host (exactly or ``*``) and the operation (exactly or ALL) wins; then an
  ALLOW matching the same way, where DESCRIBE is also granted by READ, WRITE, DELETE and ALTER,
  and DESCRIBE_CONFIGS by ALTER_CONFIGS (implied operations are not denied by a DENY of the
  implying one); with no binding at all on the resource, ``allow.everyone.if.no.acl.found``
  decides (false by default);
- filters (DescribeAcls, DeleteAcls) match with ANY for every field, MATCH for pattern types
  (a MATCH name selects the bindings that would apply to a resource of that name), and exact
  principal and host strings.

Codes are Kafka's protocol values. Bindings travel in the metadata as JSON dicts
(``AclBinding.to_dict``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Any

from conformance.protocol import AclOperation, AclPatternType, AclPermissionType, AclResourceType

WILDCARD_RESOURCE = "*"
WILDCARD_HOST = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


#: operations an ALLOW of any of which grants the key operation (Kafka's implied operations)
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {
            AclOperation.DESCRIBE,
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DELETE,
            AclOperation.ALTER,
        }
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset(
        {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    ),
}


def _enum(kind: type[IntEnum], value: int | str | IntEnum) -> Any:
    """A code or name as the enum; codes Kafka does not define are UNKNOWN (as Kafka reads them)."""
    if isinstance(value, str):
        return kind[value.upper()]
    try:
        return kind(int(value))
    except ValueError:
        return kind(0)


def resource_type(value: int | str) -> AclResourceType:
    return _enum(AclResourceType, value)


def pattern_type(value: int | str) -> AclPatternType:
    return _enum(AclPatternType, value)


def operation(value: int | str) -> AclOperation:
    """The operation of a code or name; the reference speaks Kafka 3.9, which reads the
    operations later releases added (``since`` set) as UNKNOWN."""
    op = _enum(AclOperation, value)
    return AclOperation.UNKNOWN if op.since is not None else op


def permission_type(value: int | str) -> AclPermissionType:
    return _enum(AclPermissionType, value)


@dataclass(frozen=True)
class AclBinding:
    resource_type: AclResourceType
    resource_name: str
    pattern_type: AclPatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def to_dict(self) -> dict[str, Any]:
        return {
            "resource_type": int(self.resource_type),
            "resource_name": self.resource_name,
            "pattern_type": int(self.pattern_type),
            "principal": self.principal,
            "host": self.host,
            "operation": int(self.operation),
            "permission_type": int(self.permission_type),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AclBinding:
        return cls(
            resource_type(d["resource_type"]),
            d["resource_name"],
            pattern_type(d["pattern_type"]),
            d["principal"],
            d["host"],
            operation(d["operation"]),
            permission_type(d["permission_type"]),
        )

    def invalid_reason(self) -> str | None:
        """Why this binding may not be created (Kafka's checks), or None."""
        if self.resource_type in (AclResourceType.UNKNOWN, AclResourceType.ANY):
            return f"Invalid resourceType {self.resource_type.name}"
        if self.pattern_type not in (AclPatternType.LITERAL, AclPatternType.PREFIXED):
            return f"Invalid patternType {self.pattern_type.name}"
        if self.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            return f"Invalid operation {self.operation.name}"
        if self.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            return f"Invalid permissionType {self.permission_type.name}"
        if not self.resource_name:
            return "Resource name should not be empty"
        if self.resource_type == AclResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        if ":" not in self.principal:
            return (
                f"Could not parse principal from `{self.principal}` (no colon is present "
                "separating the principal type from the principal name)"
            )
        return None


@dataclass(frozen=True)
class AclBindingFilter:
    """A DescribeAcls / DeleteAcls filter; None name, principal or host match anything."""

    resource_type: AclResourceType = AclResourceType.ANY
    resource_name: str | None = None
    pattern_type: AclPatternType = AclPatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def unknown_reason(self) -> str | None:
        """Why the filter cannot be used (it holds UNKNOWN values), or None."""
        for name in ("resource_type", "pattern_type", "operation", "permission_type"):
            if getattr(self, name) == 0:
                return f"Unknown {name} in filter"
        return None

    def matches_pattern(self, b: AclBinding) -> bool:
        if self.resource_type != AclResourceType.ANY and self.resource_type != b.resource_type:
            return False
        if self.pattern_type not in (AclPatternType.ANY, AclPatternType.MATCH) and (
            self.pattern_type != b.pattern_type
        ):
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type in (AclPatternType.ANY, b.pattern_type):
            return self.resource_name == b.resource_name
        # MATCH: the bindings that would apply to a resource named resource_name
        if b.pattern_type == AclPatternType.LITERAL:
            return b.resource_name in (self.resource_name, WILDCARD_RESOURCE)
        return self.resource_name.startswith(b.resource_name)

    def matches_entry(self, b: AclBinding) -> bool:
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != b.operation:
            return False
        return self.permission_type in (AclPermissionType.ANY, b.permission_type)

    def matches(self, b: AclBinding) -> bool:
        return self.matches_pattern(b) and self.matches_entry(b)


def _entry_matches(
    b: AclBinding, principal: str, host: str, op: AclOperation, permission: AclPermissionType
) -> bool:
    return (
        b.permission_type == permission
        and b.principal in (principal, WILDCARD_PRINCIPAL)
        and b.operation in (op, AclOperation.ALL)
        and b.host in (host, WILDCARD_HOST)
    )


class AclIndex:
    """Bindings indexed for the authorizer's question "which apply to this resource?"."""

    def __init__(self, bindings: Iterable[AclBinding] = ()) -> None:
        self.bindings: list[AclBinding] = []
        self._literal: dict[tuple[AclResourceType, str], list[AclBinding]] = {}
        self._prefixed: dict[AclResourceType, dict[str, list[AclBinding]]] = {}
        seen: set[AclBinding] = set()
        for b in bindings:
            if b in seen:
                continue
            seen.add(b)
            self.bindings.append(b)
            if b.pattern_type == AclPatternType.PREFIXED:
                self._prefixed.setdefault(b.resource_type, {}).setdefault(
                    b.resource_name, []
                ).append(b)
            else:
                self._literal.setdefault((b.resource_type, b.resource_name), []).append(b)

    def applying(self, rtype: AclResourceType, name: str) -> list[AclBinding]:
        out = list(self._literal.get((rtype, name), ()))
        if name != WILDCARD_RESOURCE:
            out.extend(self._literal.get((rtype, WILDCARD_RESOURCE), ()))
        prefixes = self._prefixed.get(rtype)
        if prefixes:
            if len(prefixes) < len(name):
                for prefix, bs in prefixes.items():
                    if name.startswith(prefix):
                        out.extend(bs)
            else:
                for i in range(1, len(name) + 1):
                    out.extend(prefixes.get(name[:i], ()))
        return out

    def of_type(self, rtype: AclResourceType) -> list[AclBinding]:
        return [b for b in self.bindings if b.resource_type == rtype]

    def matching(self, f: AclBindingFilter) -> list[AclBinding]:
        return [b for b in self.bindings if f.matches(b)]


class AclAuthorizer:
    """The decision. ``bindings`` is called on every question and may return a new sequence
    whenever the ACLs change (the controller's image, a broker's metadata cache); the index is
    rebuilt only when the sequence object or its length changes."""

    def __init__(
        self,
        bindings: Any,
        *,
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
        faults: Iterable[str] = (),
    ) -> None:
        #: test-only faults (``settings.py``): ``ignore_deny``, ``match_literal_only``
        self.faults = frozenset(faults)
        self._source = bindings if callable(bindings) else (lambda: bindings)
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._seen: tuple[Any, int] | None = None
        self._index = AclIndex()

    @property
    def index(self) -> AclIndex:
        current = self._source()
        if self._seen is None or self._seen[0] is not current or self._seen[1] != len(current):
            self._index = AclIndex(
                b if isinstance(b, AclBinding) else AclBinding.from_dict(b) for b in current
            )
            self._seen = (current, len(current))
        return self._index

    def authorize(
        self,
        principal: str,
        host: str,
        op: AclOperation | int | str,
        rtype: AclResourceType | int | str,
        name: str,
    ) -> bool:
        if principal in self.super_users:
            return True
        op, rtype = operation(op), resource_type(rtype)
        acls = self.index.applying(rtype, name)
        if not acls:
            return self.allow_everyone_if_no_acl_found
        if "ignore_deny" not in self.faults and any(
            _entry_matches(b, principal, host, op, AclPermissionType.DENY) for b in acls
        ):
            return False
        allowing = IMPLIED_BY.get(op, frozenset({op}))
        return any(
            _entry_matches(b, principal, host, o, AclPermissionType.ALLOW)
            for b in acls
            for o in allowing
        )

    def authorize_any(
        self,
        principal: str,
        host: str,
        op: AclOperation | int | str,
        rtype: AclResourceType | int | str,
    ) -> bool:
        """Kafka's ``authorizeByResourceType``: could ``op`` be allowed on some resource of the
        type? An ALLOW (op or ALL) counts unless a DENY's pattern covers it."""
        if principal in self.super_users:
            return True
        op, rtype = operation(op), resource_type(rtype)
        acls = [
            b
            for b in self.index.of_type(rtype)
            if b.principal in (principal, WILDCARD_PRINCIPAL)
            and b.host in (host, WILDCARD_HOST)
            and b.operation in (op, AclOperation.ALL)
        ]
        deny = [b for b in acls if b.permission_type == AclPermissionType.DENY]
        if "ignore_deny" in self.faults:
            deny = []
        if any(
            b.pattern_type == AclPatternType.LITERAL and b.resource_name == WILDCARD_RESOURCE
            for b in deny
        ):
            return False
        deny_literal = {b.resource_name for b in deny if b.pattern_type == AclPatternType.LITERAL}
        deny_prefix = [b.resource_name for b in deny if b.pattern_type == AclPatternType.PREFIXED]
        for b in acls:
            if b.permission_type != AclPermissionType.ALLOW:
                continue
            if any(b.resource_name.startswith(p) for p in deny_prefix):
                continue
            if b.pattern_type == AclPatternType.LITERAL and b.resource_name in deny_literal:
                continue
            return True
        return self.allow_everyone_if_no_acl_found and not self.index.of_type(rtype)

    def matching(self, f: AclBindingFilter) -> list[AclBinding]:
        if "match_literal_only" in self.faults and f.pattern_type == AclPatternType.MATCH:
            f = replace(f, pattern_type=AclPatternType.LITERAL)
        return self.index.matching(f)


def group_by_resource(
    bindings: Sequence[AclBinding],
) -> list[tuple[tuple[AclResourceType, str, AclPatternType], list[AclBinding]]]:
    """Bindings grouped by resource pattern, in first-seen order (DescribeAcls' shape)."""
    groups: dict[tuple[AclResourceType, str, AclPatternType], list[AclBinding]] = {}
    for b in bindings:
        groups.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(b)
    return list(groups.items())
