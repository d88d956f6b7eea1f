"""What several SECURITY test modules (and the reference's own tests) share: the SKIP reasons
of a target without SASL or without an unprivileged principal; the ACL bodies, a binding of
CreateAcls, a filter of DescribeAcls and DeleteAcls; bindings made as the suite's super user
(waiting until every bootstrap broker shows them) and a topic of the test's own."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from conformance.protocol import (
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
    ApiKey,
)
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.provision import obtain, release

NO_SASL = (
    "the target is not run with SASL (kafka:V?security=sasl, reference?security=sasl, or "
    "--sasl-mechanism/--sasl-username/--sasl-password for an external target)"
)
NO_PRINCIPAL = (
    "the target names no unprivileged principal (kafka:V?security=sasl and "
    "reference?security=sasl do: alice; an external one takes --unprivileged-username/"
    "--unprivileged-password)"
)


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


#: how long bindings may take to reach every broker
PROPAGATION_S = 15.0


def described(harness: Harness, conn: SyncConnection, f: dict) -> set[tuple]:
    version = harness.pick_version(ApiKey.DESCRIBE_ACLS, "1+")
    body = conn.request(ApiKey.DESCRIBE_ACLS, version, f).body
    if body["ErrorCode"] != 0:
        raise MissingPrecondition(f"DescribeAcls as the suite's super user: {body['ErrorCode']}")
    return {
        (r["ResourceName"], r["PatternType"], a["Principal"], a["Operation"], a["PermissionType"])
        for r in body["Resources"]
        for a in r["Acls"]
    }


def key_of(b: dict) -> tuple:
    return (
        b["ResourceName"],
        b["ResourcePatternType"],
        b["Principal"],
        b["Operation"],
        b["PermissionType"],
    )


def create_acls(harness: Harness, bindings: list[dict]) -> None:
    """Create ``bindings`` as the suite's super user; return once every bootstrap broker's
    DescribeAcls shows them."""
    version = harness.pick_version(ApiKey.CREATE_ACLS, "1+")
    body = harness.connect().request(ApiKey.CREATE_ACLS, version, {"Creations": bindings}).body
    codes = [r["ErrorCode"] for r in body["Results"]]
    if any(codes):
        raise MissingPrecondition(f"CreateAcls as the suite's super user answered {codes}")
    wanted = {key_of(b) for b in bindings}
    principals = {b["Principal"] for b in bindings}
    deadline = time.monotonic() + PROPAGATION_S
    for ep in harness.target.bootstrap:
        conn = harness.connect(ep)
        while True:
            seen: set[tuple] = set()
            for p in principals:
                for rtype in {b["ResourceType"] for b in bindings}:
                    seen |= described(harness, conn, acl_filter(None, p, rtype=rtype))
            if wanted <= seen:
                break
            if time.monotonic() > deadline:
                raise MissingPrecondition(f"bindings not seen by {ep} after {PROPAGATION_S} s")
            time.sleep(0.1)


def delete_acls(harness: Harness, filters: list[dict]) -> list[dict]:
    version = harness.pick_version(ApiKey.DELETE_ACLS, "1+")
    body = harness.connect().request(ApiKey.DELETE_ACLS, version, {"Filters": filters}).body
    return body["FilterResults"]


@contextmanager
def acls(harness: Harness, bindings: list[dict]) -> Iterator[None]:
    create_acls(harness, bindings)
    try:
        yield
    finally:
        try:
            delete_acls(
                harness,
                [
                    acl_filter(b["ResourceName"], b["Principal"], rtype=b["ResourceType"])
                    for b in bindings
                ],
            )
        except (ConnectionError, TimeoutError):
            pass


@contextmanager
def topic(harness: Harness, what: str) -> Iterator[str]:
    got = obtain(harness, what)
    if not got.owned:
        release(harness, [got])
        raise MissingPrecondition("the test needs a topic of its own, which the suite creates")
    try:
        yield got.name
    finally:
        release(harness, [got])
