"""Spec-derived tests: every advertised (API, version) answers valid requests well-formed.

For each (API, version) of the message specs: hypothesis draws valid requests of that version
(made harmless by ``safety``), sends them, and checks the answer is one frame (PROTOCOL.R1) with
the request's correlation id (R2), that decodes as that version's response with nothing left over
(R3), whose error codes Kafka defines (R4) and documents for the API (R5, soft); and that the
advertised version was served at all (R9). A version the target does not advertise is
UNSUPPORTED; an API not on the client listener per the spec's ``listeners`` is NOT_EXPOSED.
"""

from __future__ import annotations

import pytest

from conformance.results.verdicts import MissingPrecondition
from conformance.strategies.messages import message_values
from conformance.suite import verify
from conformance.suite.cases import ApiCase, api_version_cases
from conformance.suite.harness import Harness, run_property
from conformance.suite.meta import conformance
from conformance.suite.safety import CLUSTER_ACTION, inert_request, make_safe

REQS = ("PROTOCOL.R1", "PROTOCOL.R2", "PROTOCOL.R3", "PROTOCOL.R4", "PROTOCOL.R5", "PROTOCOL.R9")


class Session:
    """One connection, reopened after the target closes it (shrinking replays examples)."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.conn = None

    def get(self):
        if self.conn is None or self.conn.closed:
            self.conn = self.harness.connect("client")
        return self.conn


def check_answer(harness: Harness, conn, api_key: int, version: int, body: dict) -> dict:
    try:
        resp = verify.expect_response(conn, api_key, version, body)
        verify.check_error_codes(harness, api_key, resp.body)
    except verify.Failed as e:
        request = verify.describe(harness, api_key, version, body)
        raise verify.Failed(f"{e} -- request: {request}", *e.req_ids) from None
    return resp.body


@pytest.mark.parametrize("case", api_version_cases(), ids=str)
@conformance("spec/{case}/well-formed", *REQS)
def test_valid_requests_are_answered(harness: Harness, case: ApiCase) -> None:
    api, version = case.api_key, case.version
    assert version is not None
    harness.require(api, version)
    harness.note(api, version, "client")
    session = Session(harness)
    if api in CLUSTER_ACTION:
        conn = session.get()
        try:
            check_answer(harness, conn, api, version, inert_request(harness.codec, api, version))
        except verify.Failed as e:
            if e.req_ids == ("PROTOCOL.R9",) and conn.closed:
                raise MissingPrecondition(
                    f"{case.name} is an inter-broker API and the target refuses it from a client "
                    "by closing the connection; its answer could not be checked"
                ) from None
            raise
        return
    spec = harness.codec.message(api, "request")

    def one(value: dict) -> None:
        check_answer(harness, session.get(), api, version, make_safe(spec, version, value))

    run_property(harness, message_values(spec, version), one)
