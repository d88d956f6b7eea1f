"""SECURITY.R14: the authorized-operations fields agree with the ACLs (KIP-430).

Judged with the target's unprivileged principal (else SKIP), granted READ and ALTER_CONFIGS on
a topic of the test's own and READ on a group of its own, and nothing on the cluster. A field's
bit ``1 << code`` is the operation of that AclOperation code; DESCRIBE follows from READ and
DESCRIBE_CONFIGS from ALTER_CONFIGS (Kafka's implied operations). A field the request did not
ask for is INT32_MIN.
"""

from __future__ import annotations

from conformance.protocol import (
    AUTHORIZED_OPERATIONS_UNSET,
    AclOperation,
    AclResourceType,
    ApiKey,
)
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.groups.commits import commit
from conformance.suite.groups.members import delete_groups, ready_coordinator
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.safety import fresh_name
from conformance.suite.security.shared import NO_PRINCIPAL, acls, binding, topic

R14 = "SECURITY.R14"
R, W, D = AclOperation.READ, AclOperation.ALTER_CONFIGS, AclOperation.DESCRIBE
#: what each grant allows, Kafka's implied operations included
TOPIC_GRANTED = (R, D, AclOperation.DESCRIBE_CONFIGS, W)
GROUP_GRANTED = (R, D)
#: the operations Kafka defines on the cluster, which a super user holds
CLUSTER_ALL = (
    AclOperation.CREATE,
    AclOperation.ALTER,
    D,
    AclOperation.CLUSTER_ACTION,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
    AclOperation.IDEMPOTENT_WRITE,
)


def bits(operations: tuple[AclOperation, ...]) -> int:
    out = 0
    for op in operations:
        out |= 1 << int(op)
    return out


def names(field: int) -> str:
    if field == AUTHORIZED_OPERATIONS_UNSET:
        return "INT32_MIN (not computed)"
    return "{" + ", ".join(o.name for o in AclOperation if o > 1 and field >> int(o) & 1) + "}"


def _expect(field: int, want: int, what: str) -> None:
    verify.check(
        field == want, f"{what} was {field} = {names(field)}, not {want} = {names(want)}", R14
    )


def _metadata(harness: Harness, conn: SyncConnection, name: str, include: bool) -> int:
    version = harness.pick_version(ApiKey.METADATA, "8+")
    body = {
        "Topics": [{"Name": name}],
        "AllowAutoTopicCreation": False,
        "IncludeClusterAuthorizedOperations": False,
        "IncludeTopicAuthorizedOperations": include,
    }
    got = verify.expect_response(conn, ApiKey.METADATA, version, body).body["Topics"][0]
    verify.check(got["ErrorCode"] == 0, f"Metadata v{version} of {name}: {got['ErrorCode']}", R14)
    return got["TopicAuthorizedOperations"]


def _cluster(harness: Harness, conn: SyncConnection, include: bool) -> int:
    version = harness.pick_version(ApiKey.DESCRIBE_CLUSTER)
    body = {"IncludeClusterAuthorizedOperations": include, "EndpointType": 1}
    got = verify.expect_response(conn, ApiKey.DESCRIBE_CLUSTER, version, body).body
    verify.check(got["ErrorCode"] == 0, f"DescribeCluster v{version}: {got['ErrorCode']}", R14)
    return got["ClusterAuthorizedOperations"]


def _group(harness: Harness, conn: SyncConnection, group: str, include: bool) -> int:
    version = harness.pick_version(ApiKey.DESCRIBE_GROUPS, "3+")
    body = {"Groups": [group], "IncludeAuthorizedOperations": include}
    got = verify.expect_response(conn, ApiKey.DESCRIBE_GROUPS, version, body).body["Groups"][0]
    verify.check(
        got["ErrorCode"] == 0, f"DescribeGroups v{version} of {group}: {got['ErrorCode']}", R14
    )
    return got["AuthorizedOperations"]


@conformance("security/acls/authorized-operations", R14, api=ApiKey.METADATA)
def test_authorized_operations_agree_with_the_acls(harness: Harness) -> None:
    harness.pick_version(ApiKey.METADATA, "8+")
    harness.pick_version(ApiKey.DESCRIBE_CLUSTER)
    harness.pick_version(ApiKey.DESCRIBE_GROUPS, "3+")
    alice = harness.target.unprivileged
    if harness.target.sasl is None or alice is None:
        raise MissingPrecondition(NO_PRINCIPAL)
    who = f"User:{alice.username}"
    group = fresh_name("sec-ops-group")
    with topic(harness, "sec-ops") as name:
        # the group exists (Empty), made by the suite's super user, so that it can be described
        coordinator = ready_coordinator(
            harness, group, harness.pick_version(ApiKey.FIND_COORDINATOR)
        )
        admin = harness.connect(coordinator.endpoint)
        version = harness.pick_version(ApiKey.OFFSET_COMMIT, "2-9")
        committed = commit(harness, admin, group, {(name, 0): (0, None)}, version=version)
        if set(committed.values()) != {0}:
            raise MissingPrecondition(f"OffsetCommit v{version} as the super user: {committed}")
        grants = [
            binding(name, who, R),
            binding(name, who, W),
            binding(group, who, R, rtype=AclResourceType.GROUP),
        ]
        try:
            with acls(harness, grants):
                conn = harness.connect(as_=alice)
                topic_ops = _metadata(harness, conn, name, True)
                topic_unasked = _metadata(harness, conn, name, False)
                cluster_ops = _cluster(harness, conn, True)
                cluster_unasked = _cluster(harness, conn, False)
                super_ops = _cluster(harness, harness.connect(), True)
                on_coordinator = harness.connect(coordinator.endpoint, as_=alice)
                group_ops = _group(harness, on_coordinator, group, True)
                group_unasked = _group(harness, on_coordinator, group, False)
        finally:
            delete_groups(harness, admin, [group])
    _expect(topic_ops, bits(TOPIC_GRANTED), f"Metadata's TopicAuthorizedOperations for {who}")
    _expect(group_ops, bits(GROUP_GRANTED), f"DescribeGroups' AuthorizedOperations for {who}")
    _expect(cluster_ops, 0, f"DescribeCluster's ClusterAuthorizedOperations for {who}")
    _expect(
        super_ops,
        bits(CLUSTER_ALL),
        "DescribeCluster's ClusterAuthorizedOperations for the super user",
    )
    for field, what in (
        (topic_unasked, "Metadata's TopicAuthorizedOperations"),
        (cluster_unasked, "DescribeCluster's ClusterAuthorizedOperations"),
        (group_unasked, "DescribeGroups' AuthorizedOperations"),
    ):
        _expect(field, AUTHORIZED_OPERATIONS_UNSET, f"{what} not asked for")
