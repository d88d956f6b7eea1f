"""Versions outside the advertised range are refused (PROTOCOL.R10): Apache Kafka closes the
connection; an answer whose error codes are all UNSUPPORTED_VERSION is accepted too. Anything
else — an answer as if the version were supported — fails.

A refusal is credited only when it is the version's doing: the same valid request (one element
in every list, fresh suite names: ``conformance.suite.kit.bodies``) is first sent at the nearest
advertised version, and must be answered there (the control). A target that refuses the request
itself leaves R10 unjudged for that version: SKIP with that reason, never PASS.
"""

from __future__ import annotations

import pytest

from conformance.client.wire import ConnectionClosed, ProtocolViolation
from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.errors import DecodeError
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kit import credit, verify
from conformance.suite.kit.bodies import valid_body
from conformance.suite.kit.cases import ApiCase, api_cases
from conformance.suite.kit.harness import Harness, frame_claiming
from conformance.suite.kit.meta import conformance

R10 = "PROTOCOL.R10"


def _control_answered(harness: Harness, conn, api_key: int, version: int, body: dict) -> str:
    """'' when the request at the advertised ``version`` was answered, else why not."""
    try:
        conn.request(api_key, version, body)
    except (DecodeError, ProtocolViolation):
        return ""  # answered (its shape is the spec-derived tests' business)
    except ConnectionClosed:
        return "the target closed the connection"
    except TimeoutError:
        return "no answer within the timeout"
    return ""


def _refused(harness: Harness, api_key: int, claimed: int) -> None:
    ours = harness.codec.message(api_key, "request").valid_versions
    body_version = min(max(claimed, ours.lo), ours.hi)
    lo, hi = harness.advertised[api_key]
    control = min(max(body_version, lo), hi)
    name = harness.api_name(api_key)
    body = valid_body(harness.codec, api_key, body_version)
    conn = harness.connect()
    why = _control_answered(harness, conn, api_key, control, body)
    if why:
        credit.cannot_check(
            MissingPrecondition(
                f"{name} v{claimed} not judged: the same request at the advertised v{control} "
                f"was refused too ({why}), so a refusal would not be the version's doing"
            ),
            R10,
        )
        return
    if conn.closed:
        conn = harness.connect()
    cid = 11
    frame = frame_claiming(harness, api_key, claimed, body_version, body, cid)
    fut = conn.send_frame(frame, api_key, body_version, cid)
    verify.expect_error_or_disconnect(
        conn,
        fut,
        api_key,
        timeout=10,
        accept={ErrorCode.UNSUPPORTED_VERSION},
        message=f"{name} v{claimed} (advertised {lo}-{hi}; v{control} answered)",
        req_ids=(R10,),
    )


@pytest.mark.parametrize(
    "case", [c for c in api_cases() if c.api_key != ApiKey.API_VERSIONS], ids=str
)
@conformance("protocol/versions/{case}/outside-advertised-refused", R10)
def test_versions_outside_the_advertised_range_are_refused(harness: Harness, case: ApiCase) -> None:
    harness.require(case.api_key)
    lo, hi = harness.advertised[case.api_key]
    harness.note(case.api_key, hi + 1)
    _refused(harness, case.api_key, hi + 1)
    if lo > 0:
        harness.note(case.api_key, lo - 1)
        _refused(harness, case.api_key, lo - 1)
