"""Each requirement of a test is judged on its own, and R10 only on refusals that are the
version's doing (a reference cluster behind a proxy that closes connections on one API).

* the proxy closes every second Metadata v1 request: PROTOCOL.R9 FAILs, while R1-R3 are judged
  (PASS) on the answers that did come back, not left SKIP behind R9's failure;
* the proxy closes every JoinGroup request: R10 for JoinGroup is not PASS (its control, the same
  request at an advertised version, was refused too: SKIP naming that), while R9 FAILs.
"""

from __future__ import annotations

from conformance.protocol import ApiKey
from tests.support.faults_protocol import CloseOn
from tests.support.proxies import FaultyProxy, passthrough
from tests.support.runs import verdicts

SEED = "20261122"


def run_closing(cli, target, fault: CloseOn, select: str):
    ep = target.bootstrap[0]
    with FaultyProxy((ep.host, ep.port), passthrough, request_fault=fault.request) as proxy:
        proc, run = cli(
            "--bootstrap-server", proxy.address, "--target-name", "closing", "--seed", SEED,
            "--select", select,
        )  # fmt: skip
    assert run is not None, proc.stderr[-2000:]
    assert fault.closed > 0
    assert not [r for r in run.records if r["verdict"] == "ERROR"], proc.stdout[-3000:]
    return run


def test_a_closed_connection_does_not_hide_the_answers_that_came_back(cli, reference) -> None:
    run = run_closing(
        cli, reference, CloseOn(ApiKey.METADATA, every=2), "protocol/spec/metadata/v1/"
    )
    v = verdicts(run)
    test = "protocol/spec/metadata/v1/well-formed"
    assert v[(test, "PROTOCOL.R9")] == "FAIL"
    for judged in ("PROTOCOL.R1", "PROTOCOL.R2", "PROTOCOL.R3"):
        assert v[(test, judged)] == "PASS", (judged, run.records)
    record = next(r for r in run.records if r["requirement_id"] == "PROTOCOL.R3")
    assert record["observed"]["checks"] >= 2 and record["observed"]["failed"] == 0


def test_a_refusal_of_the_request_itself_is_not_credited_to_the_version(cli, reference) -> None:
    run = run_closing(
        cli,
        reference,
        CloseOn(ApiKey.JOIN_GROUP),
        "protocol/versions/join-group/ or protocol/spec/join-group/v5/",
    )
    v = verdicts(run)
    refused = ("protocol/versions/join-group/outside-advertised-refused", "PROTOCOL.R10")
    assert v[refused] == "SKIP", run.records
    record = next(r for r in run.records if (r["test_id"], r["requirement_id"]) == refused)
    assert "was refused too" in record["message"], record
    assert v[("protocol/spec/join-group/v5/well-formed", "PROTOCOL.R9")] == "FAIL"
