"""SECURITY R1-R3 on Apache Kafka with ``security=sasl`` (one broker, started once for the
module), behind a fault, and on a target without SASL:

* as it is, the suite authenticating as the target's super user: R1-R3 PASS;
* behind a proxy that turns SASL_AUTHENTICATION_FAILED and UNSUPPORTED_SASL_MECHANISM into NONE
  (a handshake that accepts a wrong password or an unknown mechanism): R1 and R3 FAIL;
* the reference (no SASL): SKIP, naming that the target is not run with SASL.

R2's fault (a broker serving Metadata before authentication) and R4-R14's are the reference's
(test_secured_reference.py). The run reaches Kafka as an external target, given the super user
(``--sasl-*``) and alice (``--unprivileged-*``), so R4-R14 are judged too: PASS (R11's SCRAM
logins see through the proxy: a hidden refusal does not verify).
This is the one secured-Kafka start in CI (the target's settings are tests/targets/).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.protocol import ApiKey, Codec, ErrorCode
from conformance.protocol.framing import decode_response, encode_response
from conformance.targets.kafka import KafkaTarget
from conformance.targets.maven import cached_broker
from tests.support.proxies import FaultyProxy
from tests.support.runs import verdicts

RELEASE = "3.9.1"
CODEC = Codec.from_specs()
REFUSALS = {
    ApiKey.SASL_AUTHENTICATE: ErrorCode.SASL_AUTHENTICATION_FAILED,
    ApiKey.SASL_HANDSHAKE: ErrorCode.UNSUPPORTED_SASL_MECHANISM,
}


def refusals_hidden(api: int, version: int, frame: bytes) -> bytes:
    if api not in REFUSALS:
        return frame
    header, body = decode_response(CODEC, api, version, frame)
    if body["ErrorCode"] != REFUSALS[api]:
        return frame
    body["ErrorCode"] = 0
    return encode_response(CODEC, api, version, header["CorrelationId"], body)


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    if cached_broker(RELEASE) is None:
        pytest.skip(
            f"Apache Kafka {RELEASE} is not cached (kafka-conformance fetch kafka:{RELEASE})"
        )
    target = KafkaTarget.from_spec(f"{RELEASE}?brokers=1&security=sasl")
    target.logs_dir = tmp_path_factory.mktemp("kafka")
    target.start()
    try:
        yield target
    finally:
        target.stop()


#: R4-R14, judged as alice (given with --unprivileged-username/--unprivileged-password) or as
#: the super user (R11, R12: the SCRAM credentials)
ACL_PASSES = {f"SECURITY.R{i}": "PASS" for i in range(4, 15)}


def run_security(cli, bootstrap: str, secured: KafkaTarget, select: str = "SECURITY"):
    proc, run = cli(
        "--bootstrap-server",
        bootstrap,
        "--sasl-mechanism",
        "PLAIN",
        "--sasl-username",
        "admin",
        "--sasl-password",
        secured.passwords["admin"],
        "--unprivileged-username",
        "alice",
        "--unprivileged-password",
        secured.passwords["alice"],
        "--select",
        select,
    )
    assert run is not None, proc.stderr[-2000:]
    return {req: v for (_, req), v in verdicts(run).items()}, run


def test_a_secured_kafka_passes(cli, secured) -> None:
    got, run = run_security(cli, str(secured.bootstrap[0]), secured)
    sasl = {f"SECURITY.R{i}": "PASS" for i in (1, 2, 3, 15)}  # R15: SCRAM-SHA-256 re-authenticated
    assert got == sasl | ACL_PASSES
    # no secret in the run's results nor in the settings and logs kept of the brokers
    kept = [p for d in (run.dir, secured.logs_dir) for p in Path(d).rglob("*") if p.is_file()]
    assert any(p.name == "broker-1.properties" for p in kept)
    for path in kept:
        text = path.read_text(errors="replace")
        assert not any(pw in text for pw in secured.passwords.values()), path


def test_hidden_refusals_fail_r1_and_r3(cli, secured) -> None:
    ep = secured.bootstrap[0]
    with FaultyProxy((ep.host, ep.port), refusals_hidden) as proxy:
        # (R15, re-authentication, waits out a session: judged by the run above)
        got, run = run_security(cli, proxy.address, secured, "SECURITY and not SECURITY.R15")
    assert got == {"SECURITY.R1": "FAIL", "SECURITY.R2": "PASS", "SECURITY.R3": "FAIL"} | ACL_PASSES
    messages = " ".join(r["message"] or "" for r in run.records)
    assert "was accepted" in messages and "ErrorCode is 0" in messages


def test_without_sasl_every_requirement_is_skip(cli) -> None:
    """The run's own reference (not the ``reference`` fixture, which would join this module to
    the costly reference group's worker): every requirement SKIP but R12 (the SCRAM APIs'
    refusals, judged as the one principal of a target without SASL): PASS."""
    proc, run = cli("--target", "reference", "--select", "SECURITY", "--jobs", "1")
    assert run is not None, proc.stderr[-2000:]
    records = run.records
    assert {r["requirement_id"] for r in records} == {f"SECURITY.R{i}" for i in range(1, 16)}
    assert {r["verdict"] for r in records if r["requirement_id"] == "SECURITY.R12"} == {"PASS"}
    skipped = [r for r in records if r["requirement_id"] != "SECURITY.R12"]
    assert all(r["verdict"] == "SKIP" for r in skipped)
    assert all(
        (
            "not run with SASL"
            if r["requirement_id"] in {f"SECURITY.R{i}" for i in (1, 2, 3, 11, 15)}
            else "no unprivileged principal"
        )
        in r["message"]
        for r in skipped
    )
