"""Versions outside the advertised range are refused (PROTOCOL.R10): Apache Kafka closes the
connection; an answer whose error codes are all UNSUPPORTED_VERSION is accepted too. Anything
else — an answer as if the version were supported — fails."""

from __future__ import annotations

import pytest

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite import verify
from conformance.suite.cases import ApiCase, api_cases
from conformance.suite.harness import Harness, frame_claiming
from conformance.suite.meta import conformance
from conformance.suite.safety import CLUSTER_ACTION, inert_request, make_safe


def minimal_body(harness: Harness, api_key: int, version: int) -> dict:
    if api_key in CLUSTER_ACTION:
        return inert_request(harness.codec, api_key, version)
    spec = harness.codec.message(api_key, "request")
    defaults = {f.name: f.default_value() for f in spec.struct.fields}
    return make_safe(spec, version, defaults)


def _refused(harness: Harness, api_key: int, claimed: int) -> None:
    ours = harness.codec.message(api_key, "request").valid_versions
    body_version = min(max(claimed, ours.lo), ours.hi)
    lo, hi = harness.advertised[api_key]
    conn = harness.connect()
    cid = 11
    frame = frame_claiming(
        harness, api_key, claimed, body_version, minimal_body(harness, api_key, body_version), cid
    )
    fut = conn.send_frame(frame, api_key, body_version, cid)
    how = verify.expect_error_or_disconnect(
        conn,
        fut,
        api_key,
        timeout=10,
        accept={ErrorCode.UNSUPPORTED_VERSION},
        message=f"{harness.api_name(api_key)} v{claimed} (advertised {lo}-{hi})",
        req_ids=("PROTOCOL.R10",),
    )
    assert how in ("closed", "error")


@pytest.mark.parametrize(
    "case", [c for c in api_cases() if c.api_key != ApiKey.API_VERSIONS], ids=str
)
@conformance("versions/{case}/outside-advertised-refused", "PROTOCOL.R10")
def test_versions_outside_the_advertised_range_are_refused(harness: Harness, case: ApiCase) -> None:
    harness.require(case.api_key)
    lo, hi = harness.advertised[case.api_key]
    harness.note(case.api_key, hi + 1)
    _refused(harness, case.api_key, hi + 1)
    if lo > 0:
        harness.note(case.api_key, lo - 1)
        _refused(harness, case.api_key, lo - 1)
