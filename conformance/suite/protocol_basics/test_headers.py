"""Request headers and connection ordering: null client ids (PROTOCOL.R13), unknown tagged
fields ignored in header and body (R12), pipelined requests answered in order (R2)."""

from __future__ import annotations

from conformance.client.wire import ProtocolViolation
from conformance.protocol import ApiKey
from conformance.protocol.compiler import UNKNOWN_TAGS
from conformance.protocol.errors import DecodeError
from conformance.results.verdicts import Unsupported
from conformance.suite.kit import brokers, verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.safety import fresh_name

AV_BODY = {"ClientSoftwareName": "kafka-conformance", "ClientSoftwareVersion": "0.1.0"}


def _metadata_body(version: int) -> dict:
    return {"Topics": [], "AllowAutoTopicCreation": False} if version >= 1 else {"Topics": []}


def _absent_topic_body(version: int) -> dict:
    """Metadata of one topic nobody made (not created by it: AllowAutoTopicCreation false, a
    flexible version has the field): an answer other tests cannot change. No topics at all is
    not: tansu 0.6 answers an empty list with every topic, and the tests beside this one create
    and delete theirs (PROTOCOL.R12 FAILed so in 3 of 13 concurrent tansu runs)."""
    return {"Topics": [{"Name": fresh_name("absent")}], "AllowAutoTopicCreation": False}


@conformance("protocol/headers/null-client-id", "PROTOCOL.R13", api=ApiKey.METADATA)
def test_null_client_id_is_answered(harness: Harness) -> None:
    version = harness.pick_version(
        ApiKey.METADATA, "1-8"
    )  # header v1: ClientId nullable, not compact
    conn = harness.connect(client_id=None)
    resp = verify.expect_response(
        conn, ApiKey.METADATA, version, _metadata_body(version), served="PROTOCOL.R13"
    )
    verify.check(
        resp.body["Brokers"], "Metadata with a null client id lists no broker", "PROTOCOL.R13"
    )


#: fields that may differ between two answers to the same request: the throttle time, and
#: Metadata's ControllerId, which a KRaft broker of Apache Kafka draws at random among the live
#: brokers for each answer (its clients cannot reach the controller quorum; any broker forwards)
UNSTABLE = {"ThrottleTimeMs", "ControllerId"}


def _stable(body: dict) -> dict:
    return {k: v for k, v in body.items() if k not in UNSTABLE}


def _flexible_request(harness: Harness) -> tuple[int, int, dict]:
    """(api key, version, body) of a harmless request at a flexible version the target
    advertises: Metadata, else ApiVersions (v3+), else DescribeCluster, at the highest such
    version our specs know. UNSUPPORTED when the target advertises none of them flexibly."""
    candidates = {
        ApiKey.METADATA: _absent_topic_body,
        ApiKey.API_VERSIONS: lambda v: AV_BODY,
        ApiKey.DESCRIBE_CLUSTER: lambda v: {"IncludeClusterAuthorizedOperations": False},
    }
    for key, body in candidates.items():
        if key not in harness.advertised:
            continue
        lo, hi = harness.advertised[key]
        spec = harness.codec.message(key, "request")
        ours = spec.valid_versions
        flexible = [v for v in range(max(lo, ours.lo), min(hi, ours.hi) + 1) if spec.flexible(v)]
        if flexible and key == ApiKey.METADATA:
            # any flexible version will do: the newest whose answers decode (issue 42: one that
            # does not is a set-up defect, judged by protocol/spec/metadata/vN/well-formed)
            version = brokers.metadata_version(harness, f"{flexible[0]}-{flexible[-1]}")
            if version in flexible:
                return key, version, body(version)
        elif flexible:
            harness.note(key, flexible[-1])
            return key, flexible[-1], body(flexible[-1])
    shown = ", ".join(
        f"{harness.api_name(k)} {'-'.join(map(str, harness.advertised[k]))}"
        for k in candidates
        if k in harness.advertised
    )
    raise Unsupported(
        f"no flexible version advertised of Metadata, ApiVersions or DescribeCluster ({shown})"
    )


@conformance("protocol/headers/unknown-tagged-fields-ignored", "PROTOCOL.R12", api=ApiKey.METADATA)
def test_unknown_tagged_fields_are_ignored(harness: Harness) -> None:
    key, version, body = _flexible_request(harness)
    what = f"{harness.api_name(key)} v{version}"
    conn = harness.connect()
    plain = verify.expect_response(conn, key, version, body)
    # in the body
    tagged_body = {**body, UNKNOWN_TAGS: {90: b"kc", 7000: b""}}
    resp = verify.expect_response(
        conn, key, version, tagged_body, served="PROTOCOL.R12", decoding="PROTOCOL.R12"
    )
    verify.check(
        _stable(resp.body) == _stable(plain.body),
        f"{what}: unknown body tags changed the answer: {_stable(resp.body)} vs "
        f"{_stable(plain.body)}",
        "PROTOCOL.R12",
        saw=f"{what}: the same answer with unknown body tags 90 and 7000",
    )
    # in the header
    codec = harness.codec
    header = codec.compiled_header("request", 2).encode(
        {
            "RequestApiKey": key,
            "RequestApiVersion": version,
            "CorrelationId": 4242,
            "ClientId": "kafka-conformance",
            UNKNOWN_TAGS: {77: b"\x00\x01", 500: b"x"},
        }
    )
    frame = header + codec.encode(key, version, "request", body)
    fut = conn.send_frame(frame, key, version, 4242)
    try:
        got = conn.wait(fut, 10)
    except Exception as e:
        raise verify.Failed(
            f"{what} with unknown header tags: no valid answer ({type(e).__name__}: {e})",
            "PROTOCOL.R12",
        ) from None
    verify.check(
        _stable(got.body) == _stable(plain.body),
        f"{what}: unknown header tags changed the answer: {_stable(got.body)} vs "
        f"{_stable(plain.body)}",
        "PROTOCOL.R12",
        saw=f"{what}: the same answer with unknown header tags 77 and 500",
    )


@conformance(
    "protocol/connection/pipelined-answers-in-order", "PROTOCOL.R2", api=ApiKey.API_VERSIONS
)
def test_pipelined_requests_answered_in_order(harness: Harness) -> None:
    av = harness.pick_version(ApiKey.API_VERSIONS)
    md = harness.pick_version(ApiKey.METADATA)
    conn = harness.connect()
    futs = []
    for i in range(1, 9):
        api, version, body = (
            (ApiKey.API_VERSIONS, av, AV_BODY)
            if i % 2
            else (ApiKey.METADATA, md, _metadata_body(md))
        )
        frame = harness.frame(api, version, 1000 + i, body)
        futs.append((i, conn.send_frame(frame, api, version, 1000 + i)))
    for i, fut in futs:
        try:
            resp = conn.wait(fut, 10)
        except DecodeError:
            continue  # the correlation id matched (the body is R3's business)
        except ProtocolViolation as e:
            raise verify.Failed(f"pipelined request {i}: {e}", "PROTOCOL.R2") from None
        except Exception as e:
            raise verify.Failed(
                f"pipelined request {i}: no answer ({type(e).__name__}: {e})", "PROTOCOL.R2"
            ) from None
        verify.check(
            resp.correlation_id == 1000 + i,
            f"request {i} got correlation id {resp.correlation_id}",
            "PROTOCOL.R2",
        )
