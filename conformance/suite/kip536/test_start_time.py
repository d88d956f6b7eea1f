"""KIP-536: each broker's start time, as the tagged field ``specs/requirements/kip-536.json``
documents.

The tag and its carriers are read from the requirement file's ``wire`` section. A target whose
Metadata broker entries carry no start time (or 0, the proposal's value for clusters without the
feature) has not implemented the proposal: every test is PROPOSAL_ABSENT, never FAIL.

Plausible means: after 2000-01-01, not in the future, and, where the target tells when it
spawned a broker and when that broker served (``Target.started``), between the two.
"""

from __future__ import annotations

import time
from functools import cache

from conformance.protocol import ApiKey
from conformance.requirements import requirements
from conformance.results.verdicts import MissingPrecondition, ProposalAbsent
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.znodes import zookeeper
from conformance.targets.base import Endpoint

UNKNOWN_TAGS = "_unknown_tagged_fields"
#: 2000-01-01T00:00:00Z: no broker of this protocol started before
EPOCH_2000_MS = 946_684_800_000
#: how far a start time may lie after our own clock (same machine: clock granularity only)
FUTURE_TOLERANCE_MS = 1000
#: how long brokers may take to learn a restarted broker's new start time
PROPAGATION = 10.0

View = dict[int, int | None]


@cache
def wire() -> dict:
    return requirements().features["KIP-536"].raw["wire"]


def tag() -> int:
    return int(wire()["tag"])


def carrier_versions(api_key: int) -> str:
    return next(c["versions"] for c in wire()["carriers"] if c["api_key"] == api_key)


def start_time(entry: dict, where: str, req: str) -> int | None:
    """The start time of one broker entry (None: absent), failing ``req`` if malformed."""
    raw = (entry.get(UNKNOWN_TAGS) or {}).get(tag())
    if raw is None:
        return None
    verify.check(
        len(raw) == 8, f"{where}: the start time (tag {tag()}) is {len(raw)} bytes, not 8", req
    )
    return int.from_bytes(raw, "big", signed=True)


def metadata_view(harness: Harness, where: Endpoint | str, version: int, req: str) -> View:
    body = cluster.metadata(harness, harness.connect(where), version)
    return {
        b["NodeId"]: start_time(b, f"Metadata v{version} from {where}, broker {b['NodeId']}", req)
        for b in body["Brokers"]
    }


def describe_view(harness: Harness, where: Endpoint | str, version: int, req: str) -> View:
    body = cluster.describe_cluster(harness, harness.connect(where), version)
    verify.expect_error_code(body, 0, "ErrorCode", req)
    return {
        b["BrokerId"]: start_time(
            b, f"DescribeCluster v{version} from {where}, broker {b['BrokerId']}", req
        )
        for b in body["Brokers"]
    }


def served(harness: Harness, req: str) -> tuple[int, View]:
    """Metadata's version and the bootstrap's view; PROPOSAL_ABSENT where no entry has it."""
    version = cluster.metadata_version(harness, carrier_versions(ApiKey.METADATA))
    view = metadata_view(harness, "client", version, req)
    if not any(view.values()):
        raise ProposalAbsent(
            f"Metadata v{version} broker entries carry no start time (tag {tag()}, "
            f"or 0 as the proposal answers without the feature)"
        )
    return version, view


@conformance("kip-536/metadata/start-time-plausible", "KIP-536.R1", api=ApiKey.METADATA)
def test_present_and_plausible(harness: Harness) -> None:
    version, view = served(harness, "KIP-536.R1")
    now = int(time.time() * 1000)
    for node, ms in sorted(view.items()):
        verify.check(
            ms, f"broker {node}'s Metadata v{version} entry has no start time", "KIP-536.R1"
        )
        assert ms is not None
        verify.check(
            ms > EPOCH_2000_MS, f"broker {node} started at {ms} ms, before 2000", "KIP-536.R1"
        )
        verify.check(
            ms <= now + FUTURE_TOLERANCE_MS,
            f"broker {node} started at {ms} ms, {ms - now} ms in the future",
            "KIP-536.R1",
        )
        bounds = harness.target.started.get(node)
        if bounds is not None:
            spawned, serving = bounds
            verify.check(
                spawned <= ms <= serving,
                f"broker {node} reports start time {ms}, but its process was spawned at "
                f"{spawned} and served at {serving}",
                "KIP-536.R1",
            )


@conformance("kip-536/describe-cluster/matches-metadata", "KIP-536.R2", api=ApiKey.DESCRIBE_CLUSTER)
def test_describe_cluster_agrees(harness: Harness) -> None:
    _, view = served(harness, "KIP-536.R2")
    version = harness.pick_version(
        ApiKey.DESCRIBE_CLUSTER, carrier_versions(ApiKey.DESCRIBE_CLUSTER)
    )
    described = describe_view(harness, "client", version, "KIP-536.R2")
    differ = {n: (ms, described.get(n)) for n, ms in view.items() if described.get(n) != ms}
    verify.check(
        not differ,
        f"start times (Metadata, DescribeCluster v{version}) differ for brokers {differ}",
        "KIP-536.R2",
    )


@conformance("kip-536/every-broker-agrees", "KIP-536.R3", api=ApiKey.METADATA)
def test_every_broker_reports_the_same(harness: Harness) -> None:
    version, first = served(harness, "KIP-536.R3")
    dc = ApiKey.DESCRIBE_CLUSTER in harness.advertised
    dc_version = harness.pick_version(ApiKey.DESCRIBE_CLUSTER) if dc else None
    harness.note(ApiKey.METADATA, version)
    differ: dict[str, View] = {}
    for broker in cluster.brokers(harness, version):
        views = {"Metadata": metadata_view(harness, broker.endpoint, version, "KIP-536.R3")}
        if dc_version is not None:
            views["DescribeCluster"] = describe_view(
                harness, broker.endpoint, dc_version, "KIP-536.R3"
            )
        for api, view in views.items():
            if view != first:
                differ[f"{api} from {broker}"] = view
    verify.check(not differ, f"the bootstrap's view is {first}, but {differ}", "KIP-536.R3")


@conformance("kip-536/restart/later", "KIP-536.R4", api=ApiKey.METADATA, disruptive=True)
def test_later_after_a_restart(harness: Harness) -> None:
    version, before = served(harness, "KIP-536.R4")
    target = harness.target
    if not target.restartable:
        raise MissingPrecondition(
            f"the {target.kind} target does not let the suite restart a broker"
        )
    node = sorted(target.restartable)[0]
    verify.check(
        before.get(node), f"broker {node} is not listed with a start time: {before}", "KIP-536.R4"
    )
    old = before[node] or 0
    harness.end_test()
    asked = int(time.time() * 1000)
    target.restart_broker(node)
    deadline = time.monotonic() + PROPAGATION
    while True:
        views = {
            str(b): metadata_view(harness, b.endpoint, version, "KIP-536.R4").get(node)
            for b in cluster.brokers(harness, version)
        }
        harness.end_test()
        stale = {k: v for k, v in views.items() if v is None or v <= old}
        if not stale or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    verify.check(
        not stale,
        f"broker {node} started at {old} before its restart; {PROPAGATION:.0f} s after it came "
        f"back these views still say: {stale}",
        "KIP-536.R4",
    )
    early = {k: v for k, v in views.items() if v is not None and v < asked}
    verify.check(
        not early,
        f"broker {node} was restarted at {asked} ms, but its start time is earlier: {early}",
        "KIP-536.R4",
    )


@conformance("kip-536/zookeeper/broker-znode-timestamp", "KIP-536.R5", api=ApiKey.METADATA)
def test_equals_the_broker_znode_timestamp(harness: Harness) -> None:
    _, view = served(harness, "KIP-536.R5")
    with zookeeper(harness) as zk:
        for node, ms in sorted(view.items()):
            found = zk.json(f"/brokers/ids/{node}")
            verify.check(
                found is not None, f"no /brokers/ids/{node} znode for a listed broker", "KIP-536.R5"
            )
            assert found is not None
            znode = found[0]
            stamp = znode.get("timestamp") if isinstance(znode, dict) else None
            verify.check(
                stamp is not None and str(stamp) == str(ms),
                f"broker {node}: /brokers/ids/{node} timestamp is {stamp!r}, its start time {ms}",
                "KIP-536.R5",
            )
