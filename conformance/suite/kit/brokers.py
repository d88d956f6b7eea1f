"""The target's brokers as clients see them: client Metadata, DescribeCluster, broker configs.

Shared by the feature tests that must ask every broker in turn (KIP-536, KIP-590, the broker
lifecycle): who the brokers are, what each one's Metadata and DescribeCluster say, and the
static configs a broker reports about itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.protocol import ApiKey, ConfigResourceType
from conformance.protocol.errors import DecodeError
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.targets.base import Endpoint

ENDPOINT_BROKERS = 1


@dataclass(frozen=True)
class Broker:
    node_id: int
    endpoint: Endpoint

    def __str__(self) -> str:
        return f"broker {self.node_id} ({self.endpoint})"


def metadata_body(version: int, topics: list[str] | None = None) -> dict[str, Any]:
    """Metadata for no topic (or the named ones), never auto-creating them."""
    names = topics or []
    if version == 0 and not names:
        raise ValueError("Metadata v0 cannot ask for no topic")
    return {"Topics": [{"Name": n} for n in names], "AllowAutoTopicCreation": False}


def metadata(
    harness: Harness,
    conn: SyncConnection,
    version: int,
    topics: list[str] | None = None,
    **reqs: str,
) -> dict[str, Any]:
    return verify.expect_response(
        conn, ApiKey.METADATA, version, metadata_body(version, topics), **reqs
    ).body


def metadata_version(harness: Harness, within: str) -> int:
    """The newest Metadata version within ``within`` whose answers decode on the bootstrap
    (issue 42), for a test that judges what any of those versions carries rather than one
    version's schema: a version whose answers do not decode is one set-up defect (PROTOCOL.R3,
    recorded once per run and node) and the next lower one is judged; SKIP 'see PROTOCOL.R3'
    where none decodes; UNSUPPORTED, as ``pick_version``, where none is advertised. A test
    about one version (``kip-78/metadata/v12/...``, ``protocol/spec/metadata/v12/...``) asks
    that version itself and FAILs on it."""
    top = harness.pick_version(ApiKey.METADATA, within)
    conn = harness.connect()
    lo = within.split("-")[0].rstrip("+")
    verify.setup_response(conn, ApiKey.METADATA, metadata_body, f"{lo}-{top}")
    version = top
    while (ApiKey.METADATA, version, conn.endpoint) in harness.setup_defects:
        version -= 1
    harness.note(ApiKey.METADATA, version)
    return version


def controller_id(harness: Harness) -> int:
    """The ControllerId the bootstrap's Metadata names (-1 where it names none): a set-up
    look-up (a version whose answers do not decode: one set-up defect, then another; issue 42).
    Notes Metadata as the test's API, as the pick_version it replaces did."""
    harness.pick_version(ApiKey.METADATA, "1+")
    body = verify.setup_response(
        harness.connect(), ApiKey.METADATA, lambda v: metadata_body(v, None), "1+"
    ).body
    return body.get("ControllerId", -1)


def brokers(harness: Harness, version: int | None = None) -> list[Broker]:
    """The brokers the bootstrap's Metadata lists (advertised endpoints), by node id."""
    if version is None:  # set-up: another version where this one's answers do not decode
        body = verify.setup_response(
            harness.connect(), ApiKey.METADATA, lambda v: metadata_body(v, None), "1+"
        ).body
    else:
        body = metadata(harness, harness.connect(), version)
    return sorted(
        (Broker(b["NodeId"], Endpoint(b["Host"], b["Port"])) for b in body["Brokers"]),
        key=lambda b: b.node_id,
    )


def describe_cluster(harness: Harness, conn: SyncConnection, version: int) -> dict[str, Any]:
    body = {"IncludeClusterAuthorizedOperations": False, "EndpointType": ENDPOINT_BROKERS}
    return verify.expect_response(conn, ApiKey.DESCRIBE_CLUSTER, version, body).body


def broker_configs(harness: Harness, broker: Broker, keys: list[str]) -> dict[str, str] | None:
    """The named static configs ``broker`` reports about itself (DescribeConfigs of its BROKER
    resource, sent to it); None where DescribeConfigs is not advertised or refused."""
    if ApiKey.DESCRIBE_CONFIGS not in harness.advertised:
        return None
    lo, hi = harness.advertised[ApiKey.DESCRIBE_CONFIGS]
    ours = harness.codec.message(ApiKey.DESCRIBE_CONFIGS, "request").valid_versions
    version = min(hi, ours.hi)
    if version < max(lo, ours.lo):
        return None
    body = {
        "Resources": [
            {
                "ResourceType": ConfigResourceType.BROKER,
                "ResourceName": str(broker.node_id),
                "ConfigurationKeys": keys,
            }
        ],
        "IncludeSynonyms": False,
        "IncludeDocumentation": False,
    }
    try:
        resp = harness.connect(broker.endpoint).request(ApiKey.DESCRIBE_CONFIGS, version, body)
    except (ConnectionError, TimeoutError, OSError, DecodeError):
        return None
    results = resp.body.get("Results") or []
    if not results or results[0].get("ErrorCode"):
        return None
    return {c["Name"]: c["Value"] for c in results[0].get("Configs") or [] if c.get("Value")}
