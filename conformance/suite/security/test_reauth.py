"""SECURITY.R15: re-authentication (KIP-368), judged where the target gives sessions a lifetime.

The test logs in as the suite's user with each mechanism the suite speaks and takes the first
whose SaslAuthenticate (v1+) answers a SessionLifetimeMs above 0: none, or none short enough to
wait out in a run (``LONGEST_S``), is SKIP naming what the target answered. With that mechanism
it opens two connections: one re-authenticates on the same connection halfway into its
lifetime, the other does not. Just after the first lifetime has passed, the first must
still be served (a Metadata), and the second must be closed at its next request.
"""

from __future__ import annotations

import time

from conformance.client.sasl import MECHANISMS, SaslAuthenticationError, authenticate
from conformance.client.wire import ConnectionClosed
from conformance.protocol import ApiKey
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.meta import conformance
from conformance.suite.security.shared import NO_SASL

R15 = "SECURITY.R15"
#: the longest session lifetime the test waits out
LONGEST_S = 30.0
#: how long after the lifetime the late requests are sent (the broker's clock and ours differ)
AFTER_S = 0.4


def _login(harness: Harness, mechanism: str) -> tuple[SyncConnection, int, float] | None:
    """A connection authenticated with ``mechanism`` as the suite, its SessionLifetimeMs and
    when the exchange ended (None when the mechanism is refused)."""
    sasl = harness.target.sasl
    conn = harness.connect(authenticate=False)
    try:
        done = harness.call(
            authenticate(
                conn.conn,
                mechanism,
                sasl.username,
                sasl.password,
                versions=harness.advertised or None,
            )
        )
    except (SaslAuthenticationError, ConnectionError):
        conn.close()
        return None
    return conn, done.session_lifetime_ms, time.monotonic()


def _metadata(harness: Harness, conn: SyncConnection) -> str | None:
    """None when a Metadata is answered, else what happened instead."""
    version = harness.pick_version(ApiKey.METADATA, "1-12")
    try:
        body = {"Topics": [], "AllowAutoTopicCreation": False}
        conn.request(ApiKey.METADATA, version, body, timeout=5.0)
    except (ConnectionError, ConnectionClosed, TimeoutError) as e:
        return f"{type(e).__name__}: {e}"
    return None


@conformance("security/sasl/re-authentication", R15, api=ApiKey.SASL_AUTHENTICATE)
def test_a_session_lives_on_only_if_reauthenticated(harness: Harness) -> None:
    if harness.target.sasl is None:
        raise MissingPrecondition(NO_SASL)
    harness.pick_version(ApiKey.SASL_AUTHENTICATE, "1+")
    seen: dict[str, int | None] = {}
    chosen = None
    for mechanism in MECHANISMS:
        got = _login(harness, mechanism)
        seen[mechanism] = None if got is None else got[1]
        if got is not None and 0 < got[1] <= LONGEST_S * 1000:
            chosen = mechanism, got
            break
        if got is not None:
            got[0].close()
    if chosen is None:
        raise MissingPrecondition(
            "the target gives no session a lifetime to re-authenticate within (KIP-368's "
            f"connections.max.reauth.ms; SessionLifetimeMs per mechanism: {seen}, None: refused)"
        )
    mechanism, (lapsing, lifetime_ms, lapsing_at) = chosen
    renewed = _login(harness, mechanism)
    verify.check(renewed is not None, f"a second {mechanism} login was refused", R15)
    assert renewed is not None
    conn, _, _ = renewed
    time.sleep(lifetime_ms / 2000)
    sasl = harness.target.sasl
    versions = harness.advertised or None
    try:
        again = harness.call(
            authenticate(conn.conn, mechanism, sasl.username, sasl.password, versions=versions)
        )
    except (SaslAuthenticationError, ConnectionError) as e:
        raise verify.Failed(
            f"re-authenticating with {mechanism} on the same connection "
            f"{lifetime_ms / 2000:.1f} s into its {lifetime_ms} ms session failed: {e}",
            R15,
        ) from None
    renewed_at = time.monotonic()
    verify.check(
        again.session_lifetime_ms > 0,
        f"the re-authentication's SaslAuthenticate answered SessionLifetimeMs "
        f"{again.session_lifetime_ms}",
        R15,
    )
    time.sleep(max(0.0, lapsing_at + lifetime_ms / 1000 + AFTER_S - time.monotonic()))
    served = _metadata(harness, conn)
    late = time.monotonic() - renewed_at
    if served is not None and late * 1000 >= again.session_lifetime_ms:
        raise MissingPrecondition(
            f"the check came {late:.1f} s after the re-authentication, past its own lifetime "
            f"({again.session_lifetime_ms} ms): the machine was too slow to judge"
        )
    verify.check(
        served is None,
        f"a connection re-authenticated with {mechanism} {lifetime_ms / 2000:.1f} s into its "
        f"{lifetime_ms} ms session was not served after the first lifetime: {served}",
        R15,
    )
    expired = _metadata(harness, lapsing)
    verify.check(
        expired is not None,
        f"a {mechanism} connection not re-authenticated was still served "
        f"{time.monotonic() - lapsing_at:.1f} s into a session of {lifetime_ms} ms",
        R15,
    )
    verify.expect_disconnect(
        lapsing, 5.0, "the connection whose session expired was not closed", R15
    )
