"""Where the lifecycle RPCs are served (BROKER-REGISTRATION.R9) and what Online brokers do for
clients (BROKER-REGISTRATION.R11): registration and heartbeats belong to the controller listener;
the brokers clients see answer them, and lead only while they are listed."""

from __future__ import annotations

from conformance.client.wire import ConnectionClosed
from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit import safety, verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance

#: how a listener that does not serve an API may refuse it besides closing the connection
REFUSALS = {ErrorCode.UNSUPPORTED_VERSION, ErrorCode.INVALID_REQUEST}


@conformance(
    "broker-registration/client-listener/not-served",
    "BROKER-REGISTRATION.R9",
    api=ApiKey.BROKER_REGISTRATION,
)
def test_not_served_on_the_client_listener(harness: Harness) -> None:
    advertised = [
        harness.api_name(k)
        for k in (ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT)
        if k in harness.advertised
    ]
    verify.check(
        not advertised,
        f"the client listener advertises {', '.join(advertised)}",
        "BROKER-REGISTRATION.R9",
    )
    harness.note(ApiKey.BROKER_REGISTRATION, 0, "client")
    for key in (ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT):
        conn = harness.connect()
        body = safety.inert_request(harness.codec, key, 0)
        fut = conn.send_frame(harness.frame(key, 0, 7, body), key, 0, 7)
        verify.expect_error_or_disconnect(
            conn,
            fut,
            key,
            timeout=5.0,
            accept=REFUSALS,
            message=f"{harness.api_name(key)} v0 sent to the client listener",
            req_ids=("BROKER-REGISTRATION.R9",),
        )


@conformance(
    "broker-registration/controller-listener/served",
    "BROKER-REGISTRATION.R9",
    api=ApiKey.BROKER_HEARTBEAT,
)
def test_served_on_the_controller_listener(harness: Harness) -> None:
    harness.endpoint("controller")
    harness.require(ApiKey.BROKER_REGISTRATION, listener="controller")
    version = harness.pick_version(ApiKey.BROKER_HEARTBEAT, listener="controller")
    conn = harness.connect("controller")
    body = safety.inert_request(harness.codec, ApiKey.BROKER_HEARTBEAT, version)
    answer = verify.expect_response(
        conn, ApiKey.BROKER_HEARTBEAT, version, body, served="BROKER-REGISTRATION.R9"
    ).body
    # the inert heartbeat names no registered broker: refused either way (Apache Kafka's
    # controller says the epoch matches no registration)
    verify.expect_error_code(
        answer,
        {ErrorCode.BROKER_ID_NOT_REGISTERED, ErrorCode.STALE_BROKER_EPOCH},
        "ErrorCode",
        "BROKER-REGISTRATION.R9",
    )


@conformance(
    "broker-registration/online-brokers-serve-clients",
    "BROKER-REGISTRATION.R11",
    api=ApiKey.METADATA,
)
def test_listed_brokers_serve_and_lead(harness: Harness) -> None:
    """Every broker Metadata lists answers clients; every partition leader is a listed broker.
    Any version from 1 lists them: the newest whose answers decode (issue 42)."""
    version = cluster.metadata_version(harness, "1+")
    listed = cluster.brokers(harness, version)
    if not listed:
        raise verify.Failed("Metadata lists no broker", "BROKER-REGISTRATION.R11")
    ids = {b.node_id for b in listed}
    for broker in listed:
        try:
            conn = harness.connect(broker.endpoint)
            conn.api_versions()
        except (ConnectionClosed, OSError, TimeoutError) as e:
            raise verify.Failed(
                f"{broker} is listed but does not serve clients: {e}", "BROKER-REGISTRATION.R11"
            ) from None
        body = verify.expect_response(
            conn, ApiKey.METADATA, version, {"Topics": None, "AllowAutoTopicCreation": False}
        ).body
        leaders = {
            (t["Name"], p["PartitionIndex"]): p["LeaderId"]
            for t in body["Topics"]
            for p in t["Partitions"]
            if p["LeaderId"] >= 0
        }
        unlisted = {k: v for k, v in leaders.items() if v not in ids}
        verify.check(
            not unlisted,
            f"{broker}: partitions led by brokers not listed: {unlisted}",
            "BROKER-REGISTRATION.R11",
        )
