"""SECURITY.R4-R10: ACLs and what they protect, judged with an unprivileged principal.

Judged only where the suite authenticates as a super user and the target names a principal
with no ACL and no super user rights (``Target.unprivileged``: alice of ``kafka:V?security=sasl``
and ``reference?security=sasl``); elsewhere SKIP. Every resource is the test's own (fresh
names), so concurrent tests never meet each other's ACLs; the bindings a test
creates are deleted when it ends. ACLs reach every broker through the cluster's metadata: a
test waits (bounded) until each bootstrap broker's DescribeAcls shows them.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from conformance.protocol import (
    AclOperation,
    AclPatternType,
    AclPermissionType,
    ApiKey,
    ErrorCode,
)
from conformance.protocol.records.batch import build_batch, encode_batch
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.records_io import leader
from conformance.suite.kit.safety import fresh_name
from conformance.suite.security.shared import (
    NO_PRINCIPAL,
    PROPAGATION_S,
    acl_filter,
    acls,
    binding,
    create_acls,
    delete_acls,
    described,
    key_of,
    topic,
)

R4, R5, R6, R7 = "SECURITY.R4", "SECURITY.R5", "SECURITY.R6", "SECURITY.R7"
R8, R9, R10 = "SECURITY.R8", "SECURITY.R9", "SECURITY.R10"


def _alice(harness: Harness) -> Any:
    if harness.target.sasl is None or harness.target.unprivileged is None:
        raise MissingPrecondition(NO_PRINCIPAL)
    return harness.target.unprivileged


def _name(what: str) -> str:
    return fresh_name(f"sec-{what}")


def metadata_as(harness: Harness, conn: SyncConnection, names: list[str] | None) -> dict:
    version = harness.pick_version(ApiKey.METADATA, "1-12")
    body: dict = {"AllowAutoTopicCreation": False}
    body["Topics"] = None if names is None else [{"Name": n} for n in names]
    return verify.expect_response(conn, ApiKey.METADATA, version, body).body


def topic_codes(body: dict) -> dict[str, int]:
    return {t["Name"]: t["ErrorCode"] for t in body["Topics"]}


# --- R4: ACL filters ---------------------------------------------------------------------------


@conformance("security/acls/match-filter", R4, api=ApiKey.DESCRIBE_ACLS)
def test_a_match_filter_returns_the_bindings_that_apply(harness: Harness) -> None:
    _alice(harness)
    principal = f"User:kc-{uuid.uuid4().hex[:10]}"  # nobody logs in as it: no one else's ACLs
    name = _name("match")
    base = name[: name.index("sec-match-") + len("sec-match-")]
    literal = binding(name, principal, AclOperation.READ)
    prefixed = binding(base, principal, AclOperation.READ, pattern=AclPatternType.PREFIXED)
    wildcard = binding("*", principal, AclOperation.READ)
    other = binding(_name("other"), principal, AclOperation.READ)
    bindings = [literal, prefixed, wildcard, other]
    create_acls(harness, bindings)
    conn = harness.connect()
    try:
        got = described(harness, conn, acl_filter(name, principal, AclPatternType.MATCH))
        want = {key_of(b) for b in (literal, prefixed, wildcard)}
        verify.check(
            got == want,
            f"a MATCH filter for {name} returned {sorted(got)}, not its literal, wildcard and "
            f"prefixed bindings {sorted(want)}",
            R4,
        )
        lit = described(harness, conn, acl_filter(name, principal, AclPatternType.LITERAL))
        verify.check(
            lit == {key_of(literal)},
            f"a LITERAL filter for {name} returned {sorted(lit)}, not its one literal binding",
            R4,
        )
    finally:
        results = delete_acls(harness, [acl_filter(None, principal)])
    verify.check(
        all(r["ErrorCode"] == 0 for r in results),
        f"DeleteAcls of the test's bindings answered {results}",
        R4,
    )
    deadline = time.monotonic() + PROPAGATION_S
    while (left := described(harness, conn, acl_filter(None, principal))) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.1)
    verify.check(not left, f"DescribeAcls still returns deleted bindings {sorted(left)}", R4)


# --- R5, R6: Metadata ----------------------------------------------------------------------


@conformance("security/acls/deny-over-allow", R5, api=ApiKey.METADATA)
def test_a_deny_wins_over_an_allow(harness: Harness) -> None:
    alice = _alice(harness)
    who = f"User:{alice.username}"
    tag = uuid.uuid4().hex[:8]
    with topic(harness, f"sec-{tag}-seen") as seen, topic(harness, f"sec-{tag}-hidden") as hidden:
        prefix = seen[: seen.index(f"sec-{tag}-") + len(f"sec-{tag}-")]
        allow = binding(prefix, who, AclOperation.DESCRIBE, pattern=AclPatternType.PREFIXED)
        deny = binding(hidden, who, AclOperation.DESCRIBE, permission=AclPermissionType.DENY)
        with acls(harness, [allow, deny]):
            codes = topic_codes(metadata_as(harness, harness.connect(as_=alice), [seen, hidden]))
    verify.check(
        codes.get(seen) == 0,
        f"{who}, allowed DESCRIBE on the prefix {prefix!r}, was answered {codes.get(seen)} for "
        f"{seen}",
        R5,
    )
    verify.check(
        codes.get(hidden) == ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        f"{who}, denied DESCRIBE on {hidden} (allowed on its prefix), was answered "
        f"{codes.get(hidden)} for it, not TOPIC_AUTHORIZATION_FAILED",
        R5,
    )


@conformance("security/acls/metadata-hides", R6, api=ApiKey.METADATA)
def test_metadata_hides_what_may_not_be_described(harness: Harness) -> None:
    alice = _alice(harness)
    with topic(harness, "sec-hidden") as hidden:
        conn = harness.connect(as_=alice)
        listed = {t["Name"] for t in metadata_as(harness, conn, None)["Topics"]}
        named = topic_codes(metadata_as(harness, conn, [hidden]))
    verify.check(
        hidden not in listed,
        f"Metadata for all topics showed {hidden} to a principal with no ACL",
        R6,
    )
    verify.check(
        named.get(hidden) == ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        f"Metadata naming {hidden} answered {named.get(hidden)} to a principal with no ACL, not "
        "TOPIC_AUTHORIZATION_FAILED",
        R6,
    )


# --- R7: the data plane --------------------------------------------------------------------


def _end_offset(harness: Harness, conn: SyncConnection, name: str) -> tuple[int, int]:
    version = harness.pick_version(ApiKey.LIST_OFFSETS, "1+")
    body = {
        "ReplicaId": -1,
        "IsolationLevel": 0,
        "Topics": [{"Name": name, "Partitions": [{"PartitionIndex": 0, "Timestamp": -1}]}],
    }
    part = conn.request(ApiKey.LIST_OFFSETS, version, body).body["Topics"][0]["Partitions"][0]
    return part["ErrorCode"], part["Offset"]


@conformance("security/acls/data-plane", R7, api=ApiKey.PRODUCE)
def test_produce_fetch_and_list_offsets_are_refused(harness: Harness) -> None:
    alice = _alice(harness)
    with topic(harness, "sec-data") as name:
        where = leader(harness, name)
        conn = harness.connect(where, as_=alice)
        version = harness.pick_version(ApiKey.PRODUCE, "3-12")
        batch = encode_batch(build_batch([(int(time.time() * 1000), None, b"kc-not-allowed")]))
        produced = conn.request(
            ApiKey.PRODUCE,
            version,
            {
                "TransactionalId": None,
                "Acks": -1,
                "TimeoutMs": 10000,
                "TopicData": [{"Name": name, "PartitionData": [{"Index": 0, "Records": batch}]}],
            },
        ).body["Responses"][0]["PartitionResponses"][0]["ErrorCode"]
        fv = harness.pick_version(ApiKey.FETCH, "4-12")
        fetch = {
            "ReplicaId": -1,
            "MaxWaitMs": 0,
            "MinBytes": 0,
            "MaxBytes": 1 << 20,
            "IsolationLevel": 0,
            "SessionId": 0,
            "SessionEpoch": -1,
            "Topics": [
                {
                    "Topic": name,
                    "Partitions": [
                        {
                            "Partition": 0,
                            "CurrentLeaderEpoch": -1,
                            "FetchOffset": 0,
                            "LogStartOffset": -1,
                            "PartitionMaxBytes": 1 << 20,
                        }
                    ],
                }
            ],
            "ForgottenTopicsData": [],
            "RackId": "",
        }
        fetched = conn.request(ApiKey.FETCH, fv, fetch).body["Responses"][0]["Partitions"][0]
        listed, _ = _end_offset(harness, conn, name)
        code, end = _end_offset(harness, harness.connect(where), name)
    verify.check(
        produced == ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        f"Produce by a principal without WRITE answered {produced}, not TOPIC_AUTHORIZATION_FAILED",
        R7,
    )
    verify.check(
        code == 0 and end == 0,
        f"after the refused Produce the partition's end offset is {end} (error {code}), not 0",
        R7,
    )
    verify.check(
        fetched["ErrorCode"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED and not fetched["Records"],
        f"Fetch by a principal without READ answered {fetched['ErrorCode']} with "
        f"{len(fetched['Records'] or b'')} bytes of records",
        R7,
    )
    verify.check(
        listed == ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        f"ListOffsets by a principal without DESCRIBE answered {listed}, not "
        "TOPIC_AUTHORIZATION_FAILED",
        R7,
    )


# --- R8, R9, R10: groups, transactional ids, the cluster -------------------------------------


@conformance("security/acls/group", R8, api=ApiKey.JOIN_GROUP)
def test_a_group_without_read_is_refused(harness: Harness) -> None:
    alice = _alice(harness)
    group = _name("group")
    conn = harness.connect(as_=alice)
    jv = harness.pick_version(ApiKey.JOIN_GROUP, "0-9")
    joined = conn.request(
        ApiKey.JOIN_GROUP,
        jv,
        {
            "GroupId": group,
            "SessionTimeoutMs": 10000,
            "RebalanceTimeoutMs": 10000,
            "MemberId": "",
            "GroupInstanceId": None,
            "ProtocolType": "consumer",
            "Protocols": [{"Name": "range", "Metadata": b""}],
            "Reason": None,
        },
    ).body["ErrorCode"]
    ov = harness.pick_version(ApiKey.OFFSET_FETCH, "1-7")
    fetched = conn.request(ApiKey.OFFSET_FETCH, ov, {"GroupId": group, "Topics": None}).body
    verify.check(
        joined == ErrorCode.GROUP_AUTHORIZATION_FAILED,
        f"JoinGroup by a principal without READ on {group} answered {joined}",
        R8,
    )
    verify.check(
        fetched["ErrorCode"] == ErrorCode.GROUP_AUTHORIZATION_FAILED,
        f"OffsetFetch by a principal without READ on {group} answered {fetched['ErrorCode']}",
        R8,
    )


@conformance("security/acls/transactional-id", R9, api=ApiKey.INIT_PRODUCER_ID)
def test_a_transactional_id_without_write_is_refused(harness: Harness) -> None:
    alice = _alice(harness)
    tid = _name("txn")
    version = harness.pick_version(ApiKey.INIT_PRODUCER_ID, "0-5")
    body = {
        "TransactionalId": tid,
        "TransactionTimeoutMs": 10000,
        "ProducerId": -1,
        "ProducerEpoch": -1,
    }
    code = harness.connect(as_=alice).request(ApiKey.INIT_PRODUCER_ID, version, body).body
    verify.check(
        code["ErrorCode"] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        f"InitProducerId for {tid} by a principal without WRITE on it answered "
        f"{code['ErrorCode']}, not TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        R9,
    )


@conformance("security/acls/cluster", R10, api=ApiKey.CREATE_ACLS)
def test_the_acl_apis_need_the_cluster_operations(harness: Harness) -> None:
    alice = _alice(harness)
    who = f"User:{alice.username}"
    name = _name("grant")
    conn = harness.connect(as_=alice)
    dv = harness.pick_version(ApiKey.DESCRIBE_ACLS, "1+")
    listed = conn.request(ApiKey.DESCRIBE_ACLS, dv, acl_filter(None, None)).body["ErrorCode"]
    cv = harness.pick_version(ApiKey.CREATE_ACLS, "1+")
    grant = binding(name, who, AclOperation.ALL)
    results = conn.request(ApiKey.CREATE_ACLS, cv, {"Creations": [grant]}).body["Results"]
    time.sleep(0.5)
    created = described(harness, harness.connect(), acl_filter(name, None))
    if created:
        delete_acls(harness, [acl_filter(name, None)])
    verify.check(
        listed == ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        f"DescribeAcls by a principal without DESCRIBE on the cluster answered {listed}",
        R10,
    )
    verify.check(
        [r["ErrorCode"] for r in results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED],
        f"CreateAcls by a principal without ALTER on the cluster answered "
        f"{[r['ErrorCode'] for r in results]}",
        R10,
    )
    verify.check(not created, f"{who} created a binding for itself: {sorted(created)}", R10)
