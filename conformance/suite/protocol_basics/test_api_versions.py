"""ApiVersions: answered at every advertised version (header v0), honest and self-consistent,
and a version newer than the server's is answered in v0 with UNSUPPORTED_VERSION (KIP-511)."""

from __future__ import annotations

import pytest

from conformance.client.wire import ConnectionClosed, ProtocolViolation
from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.errors import DecodeError
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, frame_claiming
from conformance.suite.kit.meta import conformance

BODY = {"ClientSoftwareName": "kafka-conformance", "ClientSoftwareVersion": "0.1.0"}


def _spec_versions():
    from conformance.suite.kit.cases import project_codec

    return list(project_codec().message(ApiKey.API_VERSIONS, "request").valid_versions)


@pytest.mark.parametrize("version", _spec_versions())
@conformance("protocol/api-versions/v{version}/answered", "PROTOCOL.R6", api=ApiKey.API_VERSIONS)
def test_answered_at_each_advertised_version(harness: Harness, version: int) -> None:
    harness.require(ApiKey.API_VERSIONS, version)
    harness.note(ApiKey.API_VERSIONS, version)
    conn = harness.connect()
    resp = verify.expect_response(
        conn,
        ApiKey.API_VERSIONS,
        version,
        BODY,
        served="PROTOCOL.R6",
        framing="PROTOCOL.R6",
        correlation="PROTOCOL.R6",
        decoding="PROTOCOL.R6",
    )
    verify.expect_error_code(resp.body, 0, "ErrorCode", "PROTOCOL.R6")
    verify.check(resp.body["ApiKeys"], "the ApiKeys list is empty", "PROTOCOL.R6")


@conformance(
    "protocol/api-versions/newer-than-server/v0-error-answer",
    "PROTOCOL.R7",
    api=ApiKey.API_VERSIONS,
)
def test_newer_version_gets_v0_error_answer(harness: Harness) -> None:
    harness.require(ApiKey.API_VERSIONS)
    lo, hi = harness.advertised[ApiKey.API_VERSIONS]
    ours = harness.codec.message(ApiKey.API_VERSIONS, "request").valid_versions.hi
    claimed = max(hi, ours) + 1
    harness.note(ApiKey.API_VERSIONS, claimed)
    conn = harness.connect()
    frame = frame_claiming(harness, ApiKey.API_VERSIONS, claimed, ours, BODY, cid=7)
    fut = conn.send_frame(frame, ApiKey.API_VERSIONS, 0, 7)
    try:
        resp = conn.wait(fut, 10)
    except ConnectionClosed:
        raise verify.Failed(
            f"ApiVersions v{claimed} (newer than the advertised {lo}-{hi}): the target closed "
            "the connection instead of answering in v0 with UNSUPPORTED_VERSION",
            "PROTOCOL.R7",
        ) from None
    except (DecodeError, ProtocolViolation) as e:
        raise verify.Failed(
            f"ApiVersions v{claimed}: the answer is not a v0 response: {e}", "PROTOCOL.R7"
        ) from None
    except TimeoutError:
        raise verify.Failed(
            f"ApiVersions v{claimed}: no answer within 10 s", "PROTOCOL.R7"
        ) from None
    verify.expect_error_code(resp.body, ErrorCode.UNSUPPORTED_VERSION, "ErrorCode", "PROTOCOL.R7")
    keys = {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in resp.body["ApiKeys"]}
    verify.check(
        ApiKey.API_VERSIONS in keys,
        f"the v0 error answer does not list ApiVersions' own range (lists {sorted(keys)})",
        "PROTOCOL.R7",
    )
    verify.check(
        not conn.closed_by_peer(0.2), "the connection was closed after the answer", "PROTOCOL.R7"
    )


@conformance("protocol/api-versions/self-consistent", "PROTOCOL.R8", api=ApiKey.API_VERSIONS)
def test_self_consistent(harness: Harness) -> None:
    version = harness.pick_version(ApiKey.API_VERSIONS)
    conn = harness.connect()
    resp = verify.expect_response(conn, ApiKey.API_VERSIONS, version, BODY, served="PROTOCOL.R8")
    keys = [k["ApiKey"] for k in resp.body["ApiKeys"]]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    verify.check(not dupes, f"api keys listed more than once: {dupes}", "PROTOCOL.R8")
    bad = [
        (k["ApiKey"], k["MinVersion"], k["MaxVersion"])
        for k in resp.body["ApiKeys"]
        if not 0 <= k["MinVersion"] <= k["MaxVersion"]
    ]
    verify.check(not bad, f"ranges with min > max or negative: {bad}", "PROTOCOL.R8")
    verify.check(ApiKey.API_VERSIONS in keys, "ApiVersions itself is not listed", "PROTOCOL.R8")


@conformance("protocol/api-versions/listeners-respected", "PROTOCOL.R18", api=ApiKey.API_VERSIONS)
def test_only_apis_of_the_listener_are_advertised(harness: Harness) -> None:
    known = {key for (key, kind) in harness.codec.specs.by_key if kind == "request"}
    judged = sorted(k for k in harness.advertised if k in known)
    verify.check(judged, "the target advertises none of the APIs the specs know", "PROTOCOL.R18")
    wrong = [harness.api_name(k) for k in judged if not harness.exposed(k, "client")]
    verify.check(
        not wrong,
        f"advertised on the client listener, but the specs list them only for other listeners "
        f"({', '.join(harness.listener_types('client'))} expected): {', '.join(wrong)}",
        "PROTOCOL.R18",
    )
