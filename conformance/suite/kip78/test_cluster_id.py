"""KIP-78: the cluster id in Metadata v2+, its format, its stability, and the /cluster/id znode."""

from __future__ import annotations

import base64
import json
import re

import pytest

from conformance.protocol import ApiKey
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kit import verify
from conformance.suite.kit.brokers import metadata_version
from conformance.suite.kit.cases import project_codec
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.targets.base import Endpoint

FORMAT = re.compile(r"^[a-zA-Z0-9_-]+$")


def metadata_body(version: int) -> dict:
    return {"Topics": [], "AllowAutoTopicCreation": False} if version >= 1 else {"Topics": []}


def cluster_id(
    harness: Harness, where: str | Endpoint = "client", version: int | None = None
) -> str | None:
    conn = harness.connect(where)
    if version is None:  # any version with a cluster id: one whose answers do not decode is
        harness.pick_version(ApiKey.METADATA, "2+")  # a set-up defect, then another (issue 42)
        resp = verify.setup_response(conn, ApiKey.METADATA, metadata_body, "2+")
    else:
        resp = verify.expect_response(conn, ApiKey.METADATA, version, metadata_body(version))
    return resp.body["ClusterId"]


def served_id(harness: Harness) -> str:
    """The cluster id, which the remaining checks need: absent is not theirs to report."""
    cid = cluster_id(harness)
    if not cid:
        raise MissingPrecondition("the target serves no cluster id in Metadata (see KIP-78.R1)")
    return cid


def _versions() -> list[int]:
    return list(project_codec().message(ApiKey.METADATA, "request").valid_versions)


@pytest.mark.parametrize("version", [v for v in _versions() if v >= 2])
@conformance("kip-78/metadata/v{version}/cluster-id/present", "KIP-78.R1", api=ApiKey.METADATA)
def test_present_from_v2(harness: Harness, version: int) -> None:
    harness.require(ApiKey.METADATA, version)
    harness.note(ApiKey.METADATA, version)
    cid = cluster_id(harness, version=version)
    verify.check(cid, f"Metadata v{version} carries cluster id {cid!r}", "KIP-78.R1")


@pytest.mark.parametrize("version", [v for v in _versions() if v < 2])
@conformance("kip-78/metadata/v{version}/cluster-id/absent", "KIP-78.R2", api=ApiKey.METADATA)
def test_absent_before_v2(harness: Harness, version: int) -> None:
    harness.require(ApiKey.METADATA, version)
    harness.note(ApiKey.METADATA, version)
    conn = harness.connect()
    resp = verify.expect_response(
        conn,
        ApiKey.METADATA,
        version,
        metadata_body(version),
        decoding="KIP-78.R2",
        served="KIP-78.R2",
    )
    verify.check(
        "ClusterId" not in resp.body or resp.body["ClusterId"] is None,
        "a v0/v1 answer decoded with a cluster id",
        "KIP-78.R2",
    )


@conformance("kip-78/metadata/v2+/cluster-id/format", "KIP-78.R3", api=ApiKey.METADATA)
def test_format(harness: Harness) -> None:
    cid = served_id(harness)
    verify.check(
        FORMAT.match(cid),
        f"cluster id {cid!r} has characters outside [a-zA-Z0-9_-]",
        "KIP-78.R3",
        saw=f"cluster id {cid!r}",
    )


@conformance("kip-78/metadata/v2+/cluster-id/base64-uuid", "KIP-78.R4", api=ApiKey.METADATA)
def test_base64_uuid(harness: Harness) -> None:
    cid = served_id(harness)
    verify.check(
        len(cid) == 22, f"cluster id {cid!r} is {len(cid)} characters, not 22", "KIP-78.R4"
    )
    try:
        raw = base64.urlsafe_b64decode(cid + "==")
    except ValueError:
        raw = b""
    verify.check(
        len(raw) == 16, f"cluster id {cid!r} is not URL-safe Base64 of 16 bytes", "KIP-78.R4"
    )


@conformance("kip-78/metadata/v2+/cluster-id/same-everywhere", "KIP-78.R5", api=ApiKey.METADATA)
def test_same_from_every_broker_and_connection(harness: Harness) -> None:
    version = metadata_version(harness, "2+")  # a malformed v12: v11 (issue 42)
    conn = harness.connect()
    resp = verify.expect_response(conn, ApiKey.METADATA, version, metadata_body(version))
    first = resp.body["ClusterId"]
    if not first:
        raise MissingPrecondition("the target serves no cluster id in Metadata (see KIP-78.R1)")
    brokers = {Endpoint(b["Host"], b["Port"]) for b in resp.body["Brokers"]}
    places = sorted(brokers | set(harness.target.bootstrap), key=str)
    seen: dict[str, str | None] = {}
    for ep in places:
        for n in range(2):
            c = harness.connect(ep)
            for m in range(2):
                seen[f"{ep} connection {n} request {m}"] = verify.expect_response(
                    c, ApiKey.METADATA, version, metadata_body(version)
                ).body["ClusterId"]
    lower = harness.pick_version(ApiKey.METADATA, "2")  # the lowest version with the field
    seen[f"{harness.target.bootstrap[0]} v{lower}"] = cluster_id(harness, version=lower)
    differ = {k: v for k, v in seen.items() if v != first}
    verify.check(
        not differ,
        f"cluster id {first!r} on the first answer, but: {differ}",
        "KIP-78.R5",
        saw=f"{len(seen)} answers, all {first!r}" if not differ else None,
    )


@conformance(
    "kip-78/metadata/v2+/cluster-id/survives-restart",
    "KIP-78.R6",
    api=ApiKey.METADATA,
    disruptive=True,
)
def test_same_after_a_broker_restart(harness: Harness) -> None:
    target = harness.target
    if not target.restartable:
        raise MissingPrecondition(
            f"the {target.kind} target does not let the suite restart a broker"
        )
    before = served_id(harness)
    node_id, ep = sorted(target.restartable.items())[-1]
    harness.end_test()
    target.restart_broker(node_id)
    after = {str(e): cluster_id(harness, e) for e in target.restartable.values()}
    changed = {k: v for k, v in after.items() if v != before}
    verify.check(
        not changed,
        f"cluster id was {before!r}; after restarting broker {node_id} ({ep}): {changed}",
        "KIP-78.R6",
    )


@conformance(
    "kip-78/describe-cluster/cluster-id/matches-metadata", "KIP-78.R7", api=ApiKey.DESCRIBE_CLUSTER
)
def test_describe_cluster_agrees(harness: Harness) -> None:
    cid = served_id(harness)
    version = harness.pick_version(ApiKey.DESCRIBE_CLUSTER)
    conn = harness.connect()
    resp = verify.expect_response(
        conn, ApiKey.DESCRIBE_CLUSTER, version, {"IncludeClusterAuthorizedOperations": False}
    )
    verify.expect_error_code(resp.body, 0, "ErrorCode", "KIP-78.R7")
    verify.check(
        resp.body["ClusterId"] == cid,
        f"DescribeCluster says {resp.body['ClusterId']!r}, Metadata says {cid!r}",
        "KIP-78.R7",
    )


@conformance("kip-78/zookeeper/cluster-id/znode", "KIP-78.R8")
def test_znode_agrees(harness: Harness) -> None:
    connect = harness.target.zookeeper
    if not connect:
        raise MissingPrecondition("no ZooKeeper connect string (--zookeeper)")
    cid = served_id(harness)
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError

    zk = KazooClient(hosts=connect, timeout=10, read_only=True)
    try:
        zk.start(timeout=10)
        try:
            data, _ = zk.get("/cluster/id")
        except NoNodeError:
            raise verify.Failed(f"no /cluster/id znode under {connect}", "KIP-78.R8") from None
    finally:
        zk.stop()
        zk.close()
    try:
        obj = json.loads(data)
    except ValueError:
        raise verify.Failed(f"/cluster/id is not JSON: {data[:100]!r}", "KIP-78.R8") from None
    verify.check(isinstance(obj, dict), f"/cluster/id is not a JSON object: {obj!r}", "KIP-78.R8")
    verify.check(
        obj.get("id") == cid,
        f"/cluster/id holds id {obj.get('id')!r}, Metadata serves {cid!r}",
        "KIP-78.R8",
    )
    verify.check(
        obj.get("version") in (1, "1"),
        f"/cluster/id version is {obj.get('version')!r}, not 1",
        "KIP-78.R8",
    )
