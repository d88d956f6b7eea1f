"""The ACL authorizer against Kafka's rules: examples of each rule, and a property test against a
small model written from the rules alone (brute force, no index)."""

from __future__ import annotations

import asyncio
import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol import AclOperation, AclPatternType, AclPermissionType, AclResourceType
from reference_impl.handlers import create_acls, delete_acls, describe_acls
from reference_impl.security.acl import AclAuthorizer, AclBinding, AclBindingFilter, AclIndex

T, G, C = AclResourceType.TOPIC, AclResourceType.GROUP, AclResourceType.CLUSTER
LIT, PRE = AclPatternType.LITERAL, AclPatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation


def acl(name, op, perm=ALLOW, *, rtype=T, ptype=LIT, principal="User:alice", host="*"):
    return AclBinding(rtype, name, ptype, principal, host, op, perm)


def allowed(bindings, op, name="orders", *, rtype=T, principal="User:alice", host="10.0.0.1", **kw):
    return AclAuthorizer(list(bindings), **kw).authorize(principal, host, op, rtype, name)


# --- the rules, one example each ---------------------------------------------------------------


def test_no_acl_denies_unless_allow_everyone() -> None:
    assert not allowed([], Op.READ)
    assert allowed([], Op.READ, allow_everyone_if_no_acl_found=True)
    # allow-everyone only applies to resources without any binding at all
    other = acl("orders", Op.READ, principal="User:bob")
    assert not allowed([other], Op.READ, allow_everyone_if_no_acl_found=True)


def test_super_users_pass_everything_even_deny() -> None:
    deny = acl("orders", Op.ALL, DENY)
    assert allowed([deny], Op.WRITE, super_users=["User:alice"])
    assert not allowed([deny], Op.WRITE, super_users=["User:bob"])


def test_deny_wins_over_allow() -> None:
    assert not allowed([acl("orders", Op.READ), acl("orders", Op.READ, DENY)], Op.READ)
    assert not allowed([acl("orders", Op.ALL), acl("*", Op.READ, DENY)], Op.READ)


def test_implied_operations() -> None:
    for grant in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.ALL):
        assert allowed([acl("orders", grant)], Op.DESCRIBE), grant
    assert not allowed([acl("orders", Op.CREATE)], Op.DESCRIBE)
    assert allowed([acl("orders", Op.ALTER_CONFIGS)], Op.DESCRIBE_CONFIGS)
    assert not allowed([acl("orders", Op.DESCRIBE_CONFIGS)], Op.ALTER_CONFIGS)
    assert not allowed([acl("orders", Op.DESCRIBE)], Op.READ)
    # a DENY of the implying operation does not deny the implied one
    assert allowed([acl("orders", Op.READ), acl("orders", Op.READ, DENY)], Op.DESCRIBE)


def test_patterns_literal_wildcard_prefixed() -> None:
    assert allowed([acl("*", Op.READ)], Op.READ, "anything")
    assert allowed([acl("ord", Op.READ, ptype=PRE)], Op.READ, "orders")
    assert not allowed([acl("ord", Op.READ)], Op.READ, "orders")
    assert not allowed([acl("orders-x", Op.READ, ptype=PRE)], Op.READ, "orders")
    assert not allowed([acl("*", Op.READ, ptype=PRE)], Op.READ, "orders")  # a prefix "*"
    assert not allowed([acl("orders", Op.READ, rtype=G)], Op.READ, "orders", rtype=T)


def test_principal_and_host_matching() -> None:
    assert allowed([acl("orders", Op.READ, principal="User:*")], Op.READ)
    assert not allowed([acl("orders", Op.READ, principal="User:bob")], Op.READ)
    assert allowed([acl("orders", Op.READ, host="10.0.0.1")], Op.READ)
    assert not allowed([acl("orders", Op.READ, host="10.0.0.2")], Op.READ)


def test_authorize_any_resource_of_a_type() -> None:
    def any_write(bindings):
        return AclAuthorizer(bindings).authorize_any("User:alice", "h", Op.WRITE, T)

    assert any_write([acl("a", Op.WRITE)])
    assert not any_write([acl("a", Op.READ)])
    assert not any_write([acl("a", Op.WRITE), acl("*", Op.WRITE, DENY)])
    assert not any_write([acl("ab", Op.WRITE), acl("a", Op.WRITE, DENY, ptype=PRE)])
    assert any_write([acl("ab", Op.WRITE), acl("a", Op.WRITE, DENY)])


def test_filters_match_as_kafka() -> None:
    lit, pre = acl("orders", Op.READ), acl("ord", Op.WRITE, DENY, ptype=PRE)
    wild = acl("*", Op.READ, principal="User:*")
    index = AclIndex([lit, pre, wild])
    assert index.matching(AclBindingFilter()) == [lit, pre, wild]
    assert index.matching(AclBindingFilter(resource_name="orders")) == [lit]
    assert index.matching(AclBindingFilter(T, "orders", AclPatternType.MATCH)) == [lit, pre, wild]
    assert index.matching(AclBindingFilter(pattern_type=PRE)) == [pre]
    assert index.matching(AclBindingFilter(principal="User:*")) == [wild]
    assert index.matching(AclBindingFilter(operation=Op.WRITE, permission_type=DENY)) == [pre]
    assert index.matching(AclBindingFilter(resource_type=G)) == []
    assert AclBindingFilter(operation=Op.UNKNOWN).unknown_reason() is not None


def test_creation_validation() -> None:
    assert acl("orders", Op.READ).invalid_reason() is None
    assert acl("", Op.READ).invalid_reason() == "Resource name should not be empty"
    assert "kafka-cluster" in acl("other", Op.ALTER, rtype=C).invalid_reason()
    assert acl("kafka-cluster", Op.ALTER, rtype=C).invalid_reason() is None
    assert "principal" in acl("orders", Op.READ, principal="alice").invalid_reason()
    assert acl("orders", Op.ANY).invalid_reason() == "Invalid operation ANY"
    assert (
        acl("o", Op.READ, ptype=AclPatternType.MATCH).invalid_reason()
        == "Invalid patternType MATCH"
    )


# --- property: the authorizer agrees with a brute-force model ------------------------------------

NAMES = ["a", "ab", "abc", "b", "*"]
PRINCIPALS = ["User:alice", "User:bob", "User:*"]
HOSTS = ["*", "10.0.0.1", "10.0.0.2"]
#: the operations Kafka 3.9 knows (the reference reads later ones, `since` set, as UNKNOWN)
OPS = [o for o in AclOperation if o not in (Op.UNKNOWN, Op.ANY) and o.since is None]
TYPES = [T, G, C]

bindings_st = st.builds(
    AclBinding,
    st.sampled_from(TYPES),
    st.sampled_from(NAMES),
    st.sampled_from([LIT, PRE]),
    st.sampled_from(PRINCIPALS),
    st.sampled_from(HOSTS),
    st.sampled_from(OPS),
    st.sampled_from([ALLOW, DENY]),
)
query_st = st.tuples(
    st.sampled_from(PRINCIPALS[:2]),
    st.sampled_from(HOSTS[1:]),
    st.sampled_from([o for o in OPS if o != Op.ALL]),
    st.sampled_from(TYPES),
    st.sampled_from(NAMES[:4]),
)


def model(bindings, supers, everyone, principal, host, op, rtype, name) -> bool:
    """Kafka's decision, spelled out naively."""
    if principal in supers:
        return True
    applying = [
        b
        for b in bindings
        if b.resource_type == rtype
        and (
            (b.pattern_type == LIT and (b.resource_name == name or b.resource_name == "*"))
            or (b.pattern_type == PRE and name.startswith(b.resource_name))
        )
    ]
    if not applying:
        return everyone

    def hit(b, permission, ops):
        return (
            b.permission_type == permission
            and (b.principal == principal or b.principal == "User:*")
            and (b.host == host or b.host == "*")
            and (b.operation == Op.ALL or b.operation in ops)
        )

    if any(hit(b, DENY, {op}) for b in applying):
        return False
    granting = {op}
    if op == Op.DESCRIBE:
        granting |= {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}
    if op == Op.DESCRIBE_CONFIGS:
        granting |= {Op.ALTER_CONFIGS}
    return any(hit(b, ALLOW, granting) for b in applying)


@given(
    bindings=st.lists(bindings_st, min_size=3, max_size=12),
    queries=st.lists(query_st, min_size=40, max_size=40),
    supers=st.sets(st.sampled_from(PRINCIPALS[:2]), max_size=1),
    everyone=st.booleans(),
)
def test_authorizer_agrees_with_the_model(bindings, queries, supers, everyone) -> None:
    authorizer = AclAuthorizer(
        bindings, super_users=supers, allow_everyone_if_no_acl_found=everyone
    )
    for q in queries:
        assert authorizer.authorize(*q) == model(bindings, supers, everyone, *q), q


@given(bindings=st.lists(bindings_st, max_size=25), rtype=st.sampled_from(TYPES))
def test_match_filter_selects_what_applies_to_the_resource(bindings, rtype) -> None:
    index = AclIndex(bindings)
    for name in NAMES[:4]:
        selected = index.matching(AclBindingFilter(rtype, name, AclPatternType.MATCH))
        assert set(selected) == set(index.applying(rtype, name)), name


@given(bindings=st.lists(bindings_st, max_size=25))
def test_bindings_round_trip_as_metadata_json(bindings) -> None:
    assert [AclBinding.from_dict(b.to_dict()) for b in bindings] == bindings


# --- the ACL APIs on a controller (in process, a fake image) -------------------------------------


class FakeImage:
    def __init__(self) -> None:
        self.acls: list[dict] = []
        self.offset = -1


class FakeController:
    """What the ACL handlers use of the controller: commit and wait_propagated."""

    role = "controller"

    def __init__(self, authorizer) -> None:
        self.image = FakeImage()
        self.authorizer = authorizer
        self.committed: list[list[dict]] = []

    async def commit(self, records):
        after = copy.deepcopy(self.image)
        records = records(after) if callable(records) else records
        for r in records:
            if r["type"] == "acl" and r["binding"] not in after.acls:
                after.acls.append(r["binding"])
            elif r["type"] == "remove_acl" and r["binding"] in after.acls:
                after.acls.remove(r["binding"])
        after.offset += len(records)
        self.image = after
        self.committed.append(records)
        return after.offset

    async def wait_propagated(self, offset, timeout_ms):
        return True


def _controller():
    from reference_impl.config import ListenerConfig, NodeConfig
    from reference_impl.security.authorizer import NodeAclAuthorizer
    from reference_impl.security.settings import SecuritySettings

    config = NodeConfig("controller", 0, "/nonexistent", [ListenerConfig("C", 0)])
    node = FakeController(None)
    node.authorizer = NodeAclAuthorizer(config, SecuritySettings(authorizer="acl"), node)
    return node


def creation(name, op, *, ptype=3, principal="User:alice", perm=3, rtype=2):
    return {
        "ResourceType": rtype,
        "ResourceName": name,
        "ResourcePatternType": ptype,
        "Principal": principal,
        "Host": "*",
        "Operation": op,
        "PermissionType": perm,
    }


def flt(name=None, *, ptype=1, op=1, rtype=1):
    return {
        "ResourceTypeFilter": rtype,
        "ResourceNameFilter": name,
        "PatternTypeFilter": ptype,
        "PrincipalFilter": None,
        "HostFilter": None,
        "Operation": op,
        "PermissionType": 1,
    }


def test_create_describe_delete_on_the_controller() -> None:
    node = _controller()

    async def scenario():
        created = await create_acls.create(
            node,
            {
                "Creations": [
                    creation("orders", 3),
                    creation("orders", 3),  # the same binding twice: one record
                    creation("ord", 4, ptype=4),
                    creation("", 3),
                    creation("x", 3, principal="alice"),
                ]
            },
        )
        described = describe_acls.describe(node.authorizer, flt(), 3)
        deleted = await delete_acls.delete(
            node, {"Filters": [flt("orders"), flt(None, op=3), flt(None, op=0)]}
        )
        after = describe_acls.describe(node.authorizer, flt(), 3)
        return created, described, deleted, after

    created, described, deleted, after = asyncio.run(scenario())
    assert [r["ErrorCode"] for r in created["Results"]] == [0, 0, 0, 42, 42]
    assert len(node.committed[0]) == 2
    assert described["ErrorCode"] == 0
    assert {(r["ResourceName"], r["PatternType"]) for r in described["Resources"]} == {
        ("orders", 3),
        ("ord", 4),
    }
    results = deleted["FilterResults"]
    # both first filters match the READ binding on "orders": listed by each, removed once
    assert [len(r["MatchingAcls"]) for r in results[:2]] == [1, 1]
    assert results[2]["ErrorCode"] == 42
    assert node.committed[1] == [{"type": "remove_acl", "binding": node.committed[0][0]["binding"]}]
    assert [r["ResourceName"] for r in after["Resources"]] == ["ord"]


@pytest.mark.parametrize("version", [0, 1])
def test_old_describe_versions_see_literal_bindings_only(version) -> None:
    node = _controller()
    asyncio.run(
        create_acls.create(node, {"Creations": [creation("a", 3), creation("p", 3, ptype=4)]})
    )
    body = flt(ptype=3 if version == 0 else 1)
    names = [
        r["ResourceName"]
        for r in describe_acls.describe(node.authorizer, body, version)["Resources"]
    ]
    assert names == (["a"] if version == 0 else ["a", "p"])
