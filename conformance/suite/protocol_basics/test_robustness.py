"""Robustness against malformed input (bounded, loopback only).

Each test abuses one connection and then checks that a fresh connection is still served; the
first test has records acknowledged in a suite-owned topic and the last checks they are still
there (PROTOCOL.R17). Sizes are bounded: nothing here sends more than a few kilobytes. Every test
here is ``disruptive``: the module runs after all the others, in this order, so that a target
brought down by malformed input costs only the tests after it.
"""

from __future__ import annotations

import struct
import time

import pytest
from hypothesis import strategies as st

from conformance.client.wire import ConnectionClosed, ProtocolViolation
from conformance.protocol import ApiKey, DecodeError, UnknownMessageError
from conformance.results.verdicts import NotApplicable
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, run_property
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.provision import obtain
from conformance.suite.kit.records_io import fetch_all, produce
from conformance.suite.kit.safety import CLUSTER_ACTION, inert_request

INVALID = {-1, 2, 42}  # UNKNOWN_SERVER_ERROR, CORRUPT_MESSAGE, INVALID_REQUEST
SIZE = struct.Struct(">i")
CLOSE_WAIT = 5.0


@pytest.fixture(scope="module")
def acknowledged(harness: Harness):
    """Records acknowledged before the abuse: (topic, [Acked]) or the reason there are none."""
    topic = "(none)"
    try:
        topic = obtain(harness, "robustness").name  # left behind: the abuse tests read it
        acked = produce(harness, topic, [f"kept-{i}".encode() for i in range(5)])
    except (Exception, NotApplicable) as e:  # reported by the tests that need the records
        return topic, e
    finally:
        harness.end_test()
    return topic, acked


def _metadata_header(harness: Harness, version: int, cid: int = 9) -> bytes:
    flexible = harness.codec.message(ApiKey.METADATA, "request").flexible(version)
    return harness.codec.compiled_header("request", 2 if flexible else 1).encode(
        {
            "RequestApiKey": ApiKey.METADATA,
            "RequestApiVersion": version,
            "CorrelationId": cid,
            "ClientId": "kafka-conformance",
        }
    )


def _refused(harness: Harness, body: bytes, version: int, what: str) -> None:
    """Send a Metadata header + ``body`` that cannot be parsed: error answer or closed."""
    conn = harness.connect()
    fut = conn.send_frame(_metadata_header(harness, version) + body, ApiKey.METADATA, version, 9)
    verify.expect_error_or_disconnect(
        conn,
        fut,
        ApiKey.METADATA,
        timeout=CLOSE_WAIT,
        accept=INVALID,
        message=what,
        req_ids=("PROTOCOL.R14",),
    )
    verify.expect_still_serving(harness, "PROTOCOL.R14")


@conformance(
    "protocol/robustness/acknowledged-before", "PROTOCOL.R17", api=ApiKey.PRODUCE, disruptive=True
)
def test_records_acknowledged(harness: Harness, acknowledged) -> None:
    _, acked = acknowledged
    if isinstance(acked, BaseException):
        raise acked
    verify.check(len(acked) == 5, f"{len(acked)} of 5 records acknowledged", "PROTOCOL.R17")
    offsets = [a.offset for a in acked]
    verify.check(
        offsets == sorted(set(offsets)),
        f"acknowledged offsets not increasing: {offsets}",
        "PROTOCOL.R17",
    )


@conformance(
    "protocol/robustness/length-past-the-frame",
    "PROTOCOL.R14",
    api=ApiKey.METADATA,
    disruptive=True,
)
def test_array_length_past_the_frame(harness: Harness) -> None:
    version = harness.pick_version(ApiKey.METADATA, "1-8")
    _refused(
        harness,
        SIZE.pack(1000) + b"\x00\x03abc",
        version,
        "Metadata whose topic array claims 1000 entries in a 9-byte body",
    )


@conformance(
    "protocol/robustness/invalid-varint", "PROTOCOL.R14", api=ApiKey.METADATA, disruptive=True
)
def test_invalid_varint(harness: Harness) -> None:
    version = harness.pick_version(ApiKey.METADATA, "9+")
    _refused(
        harness,
        b"\xff\xff\xff\xff\xff\xff\x7f",
        version,
        "Metadata whose topic array length is a 7-byte varint",
    )


@conformance(
    "protocol/robustness/truncated-body", "PROTOCOL.R14", api=ApiKey.METADATA, disruptive=True
)
def test_truncated_body(harness: Harness) -> None:
    version = harness.pick_version(ApiKey.METADATA, "1-8")
    # one topic named with 20 characters, but only 3 of them sent
    _refused(
        harness, SIZE.pack(1) + b"\x00\x14abc", version, "Metadata with a truncated topic name"
    )


@conformance(
    "protocol/robustness/garbage-after-header", "PROTOCOL.R14", api=ApiKey.METADATA, disruptive=True
)
def test_garbage_after_a_valid_header(harness: Harness) -> None:
    version = harness.pick_version(ApiKey.METADATA, "1+")

    def one(garbage: bytes) -> None:
        conn = harness.connect()
        fut = conn.send_frame(
            _metadata_header(harness, version) + garbage, ApiKey.METADATA, version, 9
        )
        try:
            conn.wait(fut, CLOSE_WAIT)  # any answer, an error, or a close is acceptable here
        except Exception:
            pass
        conn.close()
        verify.expect_still_serving(harness, "PROTOCOL.R14")

    run_property(harness, st.binary(min_size=1, max_size=64), one)


#: api keys probed beyond those our specs define (besides the unadvertised gaps below their top)
BEYOND = (1000, 32000, 32767)


def unadvertised_keys(harness: Harness) -> list[int]:
    """Every api key the specs define that the target does not advertise on its client
    listener, every gap up to two past the highest, and a few far beyond."""
    known = {key for (key, kind) in harness.codec.specs.by_key if kind == "request"}
    keys = [*range(max(known) + 3), *BEYOND]
    return [k for k in keys if k not in harness.advertised]


def _probe(harness: Harness, key: int, cid: int):
    """Send one request of api key ``key`` on a fresh connection: (connection, future, what)."""
    conn = harness.connect()
    try:
        spec = harness.codec.message(key, "request")
    except UnknownMessageError:
        header = harness.codec.compiled_header("request", 1).encode(
            {"RequestApiKey": key, "RequestApiVersion": 0, "CorrelationId": cid, "ClientId": "kc"}
        )
        return conn, conn.send_frame(header + b"\x00\x00\x00\x00", key, 0, cid), f"api key {key}"
    version = spec.valid_versions.lo
    body = inert_request(harness.codec, key, version) if key in CLUSTER_ACTION else {}
    frame = harness.frame(key, version, cid, body)
    return conn, conn.send_frame(frame, key, version, cid), f"{harness.api_name(key)} v{version}"


def _outcome(harness: Harness, key: int, conn, fut, timeout: float) -> tuple[bool, str]:
    """(whether the target did what R11 allows, what it did): it closed the connection, answered
    an error, or served an API it implements but keeps out of ApiVersions (an answer that
    decodes as that API's response at that version, nothing left over: Apache Kafka serves the
    KIP-714 telemetry APIs it does not advertise). Silence, or an answer that is neither, is
    not allowed."""
    try:
        resp = conn.wait(fut, timeout)
    except ConnectionClosed:
        return True, "closed"
    except TimeoutError:
        if conn.closed_by_peer(0.1):
            return True, "closed"
        return False, "neither answered nor closed"
    except (UnknownMessageError, DecodeError, ProtocolViolation):
        return True, "answered"  # an answer to a key we cannot decode: the target answered
    codes = [code for _, code in verify.error_codes(harness, resp.body, key)]
    if codes and all(c != 0 for c in codes):
        return True, f"refused with error codes {codes}"
    return True, f"served, well-formed (error codes {codes or 'none'})"


@conformance("protocol/robustness/unknown-api-key", "PROTOCOL.R11", disruptive=True)
def test_unadvertised_api_keys_are_refused(harness: Harness) -> None:
    """All probes are sent at once, then awaited under one deadline: a target that leaves them
    all unanswered costs one CLOSE_WAIT, not one per key."""
    keys = unadvertised_keys(harness)
    probes = [(key, *_probe(harness, key, 100 + i)) for i, key in enumerate(keys)]
    deadline = time.monotonic() + CLOSE_WAIT
    problems, served = [], []
    for key, conn, fut, what in probes:
        remaining = max(0.1, deadline - time.monotonic())
        allowed, how = _outcome(harness, key, conn, fut, remaining)
        if not allowed:
            problems.append(f"{what}: {how}")
        elif how.startswith("served"):
            served.append(f"{what}: {how}")
    verify.check(
        not problems,
        f"requests of api keys the target does not advertise were neither refused nor "
        f"answered: {'; '.join(problems)}",
        "PROTOCOL.R11",
        saw=(f"served though not advertised: {'; '.join(served)}; " if served else "")
        + f"{len(keys)} unadvertised api keys answered or refused: "
        + ", ".join(w for *_, w in probes),
    )
    verify.expect_still_serving(harness, "PROTOCOL.R11")


@conformance("protocol/robustness/size-over-the-limit", "PROTOCOL.R15", disruptive=True)
def test_size_over_the_limit(harness: Harness) -> None:
    conn = harness.connect()
    conn.send_raw(SIZE.pack(0x7FFFFFF0) + b"\x00\x12\x00\x03")
    verify.expect_disconnect(
        conn,
        CLOSE_WAIT,
        "a frame announcing 2 GiB (over Kafka's socket.request.max.bytes, 100 MiB by default) "
        "was not refused by closing the connection",
        "PROTOCOL.R15",
    )
    verify.expect_still_serving(harness, "PROTOCOL.R15")


@conformance("protocol/robustness/negative-size", "PROTOCOL.R15", disruptive=True)
def test_negative_size(harness: Harness) -> None:
    conn = harness.connect()
    conn.send_raw(SIZE.pack(-5) + b"\x00\x12\x00\x03")
    verify.expect_disconnect(
        conn, CLOSE_WAIT, "a frame of size -5 did not close the connection", "PROTOCOL.R15"
    )
    verify.expect_still_serving(harness, "PROTOCOL.R15")


@conformance("protocol/robustness/size-larger-than-the-frame", "PROTOCOL.R14", disruptive=True)
def test_size_larger_than_the_frame(harness: Harness) -> None:
    """The size promises more than is sent and the client stops writing: nothing may be
    answered for the partial frame, and the server keeps serving others meanwhile."""
    version = harness.pick_version(ApiKey.API_VERSIONS)
    frame = harness.frame(ApiKey.API_VERSIONS, version, 3, {})
    conn = harness.connect()
    fut = conn.send_frame(frame, ApiKey.API_VERSIONS, version, 3)  # a whole request first
    conn.wait(fut, CLOSE_WAIT)
    conn.send_raw(SIZE.pack(len(frame) + 100) + frame)
    verify.expect_still_serving(harness, "PROTOCOL.R14")
    conn.abort()


@pytest.mark.parametrize("cut", ["size", "header", "body"])
@conformance("protocol/robustness/disconnect-mid-request/{cut}", "PROTOCOL.R16", disruptive=True)
def test_abrupt_disconnect_mid_request(harness: Harness, cut: str) -> None:
    version = harness.pick_version(ApiKey.METADATA, "1+")
    body = harness.codec.encode(
        ApiKey.METADATA,
        version,
        "request",
        {"Topics": [{"Name": "kc-suite-cut"}], "AllowAutoTopicCreation": False},
    )
    frame = _metadata_header(harness, version) + body
    whole = SIZE.pack(len(frame)) + frame
    at = {"size": 2, "header": 4 + 5, "body": len(whole) - 3}[cut]
    for _ in range(3):
        conn = harness.connect()
        conn.send_raw(whole[:at])
        conn.abort()
    verify.expect_still_serving(harness, "PROTOCOL.R16")


@conformance(
    "protocol/robustness/acknowledged-kept", "PROTOCOL.R17", api=ApiKey.FETCH, disruptive=True
)
def test_acknowledged_records_are_kept(harness: Harness, acknowledged) -> None:
    topic, acked = acknowledged
    if isinstance(acked, BaseException):
        raise acked
    got = fetch_all(harness, topic)
    missing = [a.offset for a in acked if got.get(a.offset) != a.value]
    verify.check(
        not missing,
        f"acknowledged records missing or changed at offsets {missing} (fetched {sorted(got)})",
        "PROTOCOL.R17",
    )
