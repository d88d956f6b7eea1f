"""SECURITY.R1-R3: what a SASL listener does before a client has authenticated.

Judged only where the suite authenticates (``Target.sasl``: ``kafka:V?security=sasl``,
``reference?security=sasl``, or an external target given ``--sasl-*``); elsewhere SKIP, naming
that the target is not run with SASL. Each test opens a connection of its own without
authenticating it.
"""

from __future__ import annotations

from conformance.client.sasl import MECHANISMS, SaslAuthenticationError, authenticate
from conformance.protocol import ApiKey, ErrorCode
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.security.shared import NO_SASL

R1, R2, R3 = "SECURITY.R1", "SECURITY.R2", "SECURITY.R3"
#: how long a refused connection may take to close
CLOSE_S = 5.0


def _sasl(harness: Harness):
    if harness.target.sasl is None:
        raise MissingPrecondition(NO_SASL)
    return harness.target.sasl


@conformance("security/sasl/wrong-credentials", R1, api=ApiKey.SASL_AUTHENTICATE)
def test_wrong_credentials_are_refused_and_the_connection_closed(harness: Harness) -> None:
    """Each mechanism the suite speaks (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) that the listener
    enables: the suite's user with a wrong password. One the handshake refuses is not judged
    (R3 judges the refusal); the suite's own mechanism is enabled, or nothing authenticates."""
    sasl = _sasl(harness)
    judged = []
    for mechanism in MECHANISMS:
        conn = harness.connect(authenticate=False)
        try:
            harness.call(
                authenticate(
                    conn.conn,
                    mechanism,
                    sasl.username,
                    sasl.password + "-not-it",
                    versions=harness.advertised or None,
                )
            )
        except SaslAuthenticationError as e:
            if e.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
                conn.close()
                continue
            # no code: the server said NONE to the last round, but its answer did not verify
            verify.check(
                e.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED,
                f"a wrong password for {mechanism} was not refused with "
                f"SASL_AUTHENTICATION_FAILED ({e})",
                R1,
                saw=f"{mechanism}: refused with error {e.error_code}",
            )
        except ConnectionError:
            verify.ran(f"{mechanism}: the connection closed during a wrong password's exchange", R1)
        else:
            verify.check(False, f"a wrong password for {mechanism} was accepted", R1)
        verify.expect_disconnect(
            conn, CLOSE_S, f"the connection stayed open after a failed {mechanism} exchange", R1
        )
        judged.append(mechanism)
    verify.check(
        sasl.mechanism in judged,
        f"the listener refused the handshake of {sasl.mechanism}, with which the suite logs in",
        R1,
    )


@conformance("security/sasl/nothing-before-authentication", R2, api=ApiKey.SASL_HANDSHAKE)
def test_no_request_is_served_before_authentication(harness: Harness) -> None:
    _sasl(harness)
    conn = harness.connect(authenticate=False)
    version = harness.pick_version(ApiKey.METADATA, "1+")
    try:
        resp = conn.request(ApiKey.METADATA, version, {"Topics": None}, timeout=CLOSE_S)
    except (ConnectionError, TimeoutError):
        verify.expect_disconnect(
            conn, CLOSE_S, "Metadata before authentication neither answered nor closed", R2
        )
        return
    verify.check(
        False,
        f"Metadata before authentication was answered ({len(resp.body.get('Brokers', []))} "
        "brokers listed)",
        R2,
    )


@conformance("security/sasl/unsupported-mechanism", R3, api=ApiKey.SASL_HANDSHAKE)
def test_an_unsupported_mechanism_is_refused_with_the_enabled_list(harness: Harness) -> None:
    sasl = _sasl(harness)
    conn = harness.connect(authenticate=False)
    resp = conn.request(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "KC-NO-SUCH-MECHANISM"})
    enabled = list(resp.body["Mechanisms"])
    verify.expect_error_code(resp.body, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "ErrorCode", R3)
    verify.check(
        sasl.mechanism in enabled,
        f"the enabled mechanisms {enabled} leave out {sasl.mechanism}, which authenticates",
        R3,
    )
