"""Spec-derived tests: every advertised (API, version) answers valid requests well-formed.

For each (API, version) of the message specs: hypothesis draws valid requests of that version
(made harmless by ``safety``), sends them, and checks the answer is one frame (PROTOCOL.R1) with
the request's correlation id (R2), that decodes as that version's response with nothing left over
(R3), whose error codes Kafka defines (R4) and documents for the API (R5, soft); and that the
advertised version was served at all (R9). A version the target does not advertise is
UNSUPPORTED; an API not on the client listener per the spec's ``listeners`` is NOT_EXPOSED.

Before the random examples, the edge pass (``conformance.suite.kit.edges``) sends the version's
documented special values and shapes every run — special timestamps, null and empty lists,
one-element lists — so that verdicts on them never depend on the seed.

Each requirement is judged on its own, on every answer: a failure is recorded against the
requirement it breaks and the examples go on, so a closed connection (R9) on one request does
not keep R3 from being judged on the answers that did come back. A request left unanswered is
not sent again in the test (the harness), so a silent target costs one timeout; an edge left
unanswered at one version is waited for only briefly at the API's other versions (the harness's
REPEAT_TIMEOUT): Apache Kafka 3.9 leaves OffsetFetch v8-v9 naming no group and AddPartitionsToTxn
v4-v5 naming no transaction unanswered, and a full wait at each version cost 40 s of a run.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

import pytest

from conformance.client.wire import ConnectionClosed, ProtocolViolation
from conformance.protocol.errors import DecodeError
from conformance.protocol.kafka_errors import error_name, is_defined
from conformance.results.verdicts import MissingPrecondition
from conformance.strategies.messages import message_values
from conformance.suite.kit import credit, verify
from conformance.suite.kit.cases import ApiCase, api_version_cases
from conformance.suite.kit.edges import edge_requests
from conformance.suite.kit.harness import (
    REPEAT_TIMEOUT,
    REQUEST_TIMEOUT,
    Harness,
    Unanswered,
    run_property,
)
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.safety import CLUSTER_ACTION, inert_request, make_safe

REQS = ("PROTOCOL.R1", "PROTOCOL.R2", "PROTOCOL.R3", "PROTOCOL.R4", "PROTOCOL.R5", "PROTOCOL.R9")

#: per run: the (api key, edge) the target left unanswered at some version of the API
_SILENT_EDGES: WeakKeyDictionary[Harness, set[tuple[int, str]]] = WeakKeyDictionary()


class Session:
    """One connection, reopened after the target closes it."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.conn = None

    def get(self):
        if self.conn is None or self.conn.closed:
            self.conn = self.harness.connect("client")
        return self.conn


def judge_answer(
    harness: Harness, conn, api_key: int, version: int, body: dict, edge: str = ""
) -> str:
    """Send one request and judge R1-R5 and R9 each on what came back, recording a failure
    against the requirement it breaks without stopping (``verify.soft``). Returns how it went:
    "answered", "malformed", "closed" or "silent"."""
    api_v = f"{harness.api_name(api_key)} v{version}"
    what = api_v + (f" [edge: {edge}]" if edge else "")
    silent = _SILENT_EDGES.setdefault(harness, set())
    again = bool(edge) and (api_key, edge) in silent

    def soft(held: bool, message: str, req_id: str) -> None:
        if not held:
            message = f"{message} -- request: {verify.describe(harness, api_key, version, body)}"
        verify.soft(harness, held, message, req_id)

    try:
        resp = conn.request(
            api_key, version, body, timeout=REPEAT_TIMEOUT if again else REQUEST_TIMEOUT
        )
    except ConnectionClosed as e:
        soft(False, f"{what}: the target closed the connection instead of answering ({e})", REQS[5])
        return "closed"
    except Unanswered as e:  # not sent: the message cites the tests that saw the API unanswered
        soft(False, f"{what}: {e}", REQS[5])
        return "silent"
    except TimeoutError as e:
        if edge:
            silent.add((api_key, edge))
        why = [str(e)] if str(e) else []
        if again:
            why.append(f"{REPEAT_TIMEOUT:.0f} s: this edge was left unanswered at another version")
        said = f" ({'; '.join(why)})" if why else ""
        soft(False, f"{what}: no answer within the timeout{said}", REQS[5])
        return "silent"
    except DecodeError as e:
        # a whole frame came back under the request's correlation id; its body is not the version's
        verify.ran(f"{what}: one frame with the request's correlation id", REQS[0], REQS[1])
        soft(False, f"{what}: the response does not decode as {api_v}: {e}", REQS[2])
        return "malformed"
    except ProtocolViolation as e:
        soft(False, f"{what}: {e}", REQS[1] if "correlation" in str(e) else REQS[0])
        return "malformed"
    verify.ran(f"{what} answered, well-formed", REQS[0], REQS[1], REQS[2], REQS[5])
    name = harness.api_name(api_key)
    allowed = verify.documented_codes(name)
    for path, code in verify.error_codes(harness, resp.body, api_key):
        soft(
            is_defined(code), f"{name}: {path} = {code} is not an error code Kafka defines", REQS[3]
        )
        if allowed is not None:
            soft(
                code in allowed,
                f"{name}: {path} = {code} ({error_name(code)}) is not documented for {name}",
                REQS[4],
            )
    return "answered"


@pytest.mark.parametrize("case", api_version_cases(), ids=str)
@conformance("protocol/spec/{case}/well-formed", *REQS)
def test_valid_requests_are_answered(harness: Harness, case: ApiCase) -> None:
    api, version = case.api_key, case.version
    assert version is not None
    harness.require(api, version)
    harness.note(api, version, "client")
    session = Session(harness)
    if api in CLUSTER_ACTION:
        conn = session.get()
        how = judge_answer(harness, conn, api, version, inert_request(harness.codec, api, version))
        if how == "closed":
            harness.notes.soft.clear()
            raise MissingPrecondition(
                f"{case.name} is an inter-broker API and the target refuses it from a client "
                "by closing the connection; its answer could not be checked"
            )
        if how == "answered" and not credit.current().credited(REQS[3]):
            # an answer of per-partition errors only (ReadShareGroupStateSummary, no top-level
            # ErrorCode) to the inert request's empty list holds no error code to judge
            why = f"{case.name} v{version}'s answer to an inert request has no error code"
            credit.cannot_check(MissingPrecondition(why), REQS[3], REQS[4])
        return
    for edge, body in edge_requests(harness.codec, api, version):
        judge_answer(harness, session.get(), api, version, body, edge)
    spec = harness.codec.message(api, "request")

    def one(value: dict) -> None:
        body = make_safe(spec, version, value, salt=str(case))  # names of this test's own
        judge_answer(harness, session.get(), api, version, body)

    run_property(harness, message_values(spec, version), one)
