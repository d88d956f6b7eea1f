"""KIP-590.R2: an Envelope from a client principal is refused and its inner request not run.

The Envelope carries a real mutation (CreateTopics of a fresh suite topic, as a principal the
suite names); afterwards that topic must not exist. Two places a client can send one:

* a broker's client listener, where the spec's ``listeners`` decide whether Envelope is exposed
  at all (NOT_EXPOSED where it is not): an advertised Envelope must be answered
  CLUSTER_AUTHORIZATION_FAILED (or the connection closed); one that is not advertised may also
  be answered UNSUPPORTED_VERSION or INVALID_REQUEST;
* a controller listener on which the suite connects as a client (``Target.controller_client``;
  SKIP where the target names none): CLUSTER_AUTHORIZATION_FAILED, as the seed's
  EnvelopeRequest Handling says.

Where the suite authenticates (SASL), it logs in as a super user, who may send an Envelope: the
Envelope then goes on a connection of the target's unprivileged principal
(``Target.unprivileged``, e.g. alice of ``kafka:V?security=sasl``); SKIP where it names none.
"""

from __future__ import annotations

import time
import uuid

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.spec import ZERO_UUID
from conformance.results.verdicts import MissingPrecondition, NotExposed
from conformance.suite.kip590.shared import create_envelope
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.meta import conformance
from conformance.targets.base import Endpoint

UNADVERTISED_REFUSALS = {
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ErrorCode.UNSUPPORTED_VERSION,
    ErrorCode.INVALID_REQUEST,
}
R2 = "KIP-590.R2"
#: how long an executed inner request could take to show
SETTLE = 0.5


def envelope(harness: Harness, topic: str) -> dict:
    body, _ = create_envelope(harness, topic, validate_only=False)
    harness.note(ApiKey.ENVELOPE, 0)
    return body


def client_connection(harness: Harness, where: str | Endpoint = "client") -> SyncConnection:
    """A connection of a client principal: the suite's own, or under SASL the unprivileged one."""
    if harness.target.sasl is None:
        return harness.connect(where)
    if harness.target.unprivileged is None:
        raise MissingPrecondition(
            "the suite logs in as a super user and the target names no unprivileged principal "
            "to send a client's Envelope as"
        )
    return harness.connect(where, as_=harness.target.unprivileged)


def send(conn: SyncConnection, body: dict):
    cid = 58
    frame = conn.harness.frame(ApiKey.ENVELOPE, 0, cid, body)
    return conn.send_frame(frame, ApiKey.ENVELOPE, 0, cid)


def not_created(harness: Harness, topic: str, where: str) -> None:
    """The inner CreateTopics did not run (the topic is deleted again if it did)."""
    time.sleep(SETTLE)
    body = verify.setup_response(  # a set-up look-up (issue 42)
        harness.connect(), ApiKey.METADATA, lambda v: cluster.metadata_body(v, [topic]), "1+"
    ).body
    codes = [t["ErrorCode"] for t in body["Topics"] if t["Name"] == topic]
    if codes and codes[0] != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        if ApiKey.DELETE_TOPICS in harness.advertised:
            harness.connect().request(
                ApiKey.DELETE_TOPICS,
                harness.pick_version(ApiKey.DELETE_TOPICS),
                {
                    "TopicNames": [topic],
                    "Topics": [{"Name": topic, "TopicId": ZERO_UUID}],
                    "TimeoutMs": 5000,
                },
            )
        raise verify.Failed(f"the Envelope sent {where} created topic {topic}", R2)


@conformance("kip-590/envelope/client-listener/refused", R2, api=ApiKey.ENVELOPE)
def test_refused_on_the_client_listener(harness: Harness) -> None:
    if not harness.exposed(ApiKey.ENVELOPE, "client"):
        spec = harness.codec.message(ApiKey.ENVELOPE, "request")
        raise NotExposed(
            f"Envelope is not on the client listener (spec listeners: {', '.join(spec.listeners)})"
        )
    harness.require(ApiKey.CREATE_TOPICS)
    topic = f"kc-suite-envelope-{uuid.uuid4().hex[:10]}"
    advertised = ApiKey.ENVELOPE in harness.advertised
    conn = client_connection(harness)
    fut = send(conn, envelope(harness, topic))
    verify.expect_error_or_disconnect(
        conn,
        fut,
        ApiKey.ENVELOPE,
        timeout=10.0,
        accept={ErrorCode.CLUSTER_AUTHORIZATION_FAILED} if advertised else UNADVERTISED_REFUSALS,
        message=f"a client's Envelope on the client listener ({'' if advertised else 'not '}"
        "advertised there)",
        req_ids=(R2,),
    )
    not_created(harness, topic, "to the client listener")


@conformance("kip-590/envelope/controller-listener/client-refused", R2, api=ApiKey.ENVELOPE)
def test_refused_by_the_controller(harness: Harness) -> None:
    ep = harness.target.controller_client
    if ep is None:
        raise MissingPrecondition(
            "no controller listener on which the suite connects as a client principal "
            "(the reference target has one; --controller-bootstrap connections may be a broker's)"
        )
    harness.require(ApiKey.CREATE_TOPICS)
    topic = f"kc-suite-envelope-{uuid.uuid4().hex[:10]}"
    conn = client_connection(harness, ep)
    advertised = ApiKey.ENVELOPE in conn.api_versions()
    conn = client_connection(harness, ep)
    harness.note(ApiKey.ENVELOPE, 0, "controller")
    if advertised:
        answer = verify.expect_response(
            conn, ApiKey.ENVELOPE, 0, envelope(harness, topic), served=R2
        )
        verify.expect_error_code(
            answer.body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "ErrorCode", R2
        )
    else:
        fut = send(conn, envelope(harness, topic))
        verify.expect_error_or_disconnect(
            conn,
            fut,
            ApiKey.ENVELOPE,
            timeout=10.0,
            accept=UNADVERTISED_REFUSALS,
            message="a client's Envelope on the controller listener (not advertised there)",
            req_ids=(R2,),
        )
    not_created(harness, topic, f"to the controller at {ep}")
