"""SASL on a listener (in process): PLAIN and SCRAM-SHA-256/512 exchanges, failures, lifetimes.

Kafka's rules under test: nothing but ApiVersions and the SASL APIs before authentication
(anything else closes the connection); wrong credentials get SASL_AUTHENTICATION_FAILED (58)
with a message and then a closed connection; an unknown mechanism gets
UNSUPPORTED_SASL_MECHANISM (33) listing the enabled ones and a closed connection; the session's
principal is ``User:<name>`` only after success.
"""

from __future__ import annotations

import asyncio

import pytest

from conformance.client.sasl import SaslAuthenticationError, authenticate
from conformance.client.wire import Connection, ConnectionClosed
from conformance.protocol import ApiKey, Codec
from reference_impl.handlers import sasl_authenticate, sasl_handshake
from reference_impl.net.listener import Api, Listener
from reference_impl.security.sasl import Credentials, SaslSecurity

CODEC = Codec.from_specs()
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
CREDENTIALS = Credentials(USERS)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


class Served:
    """A Metadata handler remembering who asked."""

    def __init__(self) -> None:
        self.principals: list[str] = []

    async def metadata(self, ctx, body):
        self.principals.append(ctx.session.principal)
        return {"Brokers": [], "ClusterId": "c", "ControllerId": -1, "Topics": []}


async def with_listener(
    test, *, mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), lifetime_ms=0, sasl=True
):
    served = Served()
    security = (
        SaslSecurity(mechanisms, CREDENTIALS, session_lifetime_ms=lifetime_ms) if sasl else None
    )
    apis = [
        sasl_handshake.api(None),
        sasl_authenticate.api(None),
        Api(ApiKey.METADATA, served.metadata),
    ]
    listener = Listener("test", "zkBroker", CODEC, apis, security=security)
    port = await listener.start()
    try:
        async with await Connection.open("127.0.0.1", port, codec=CODEC) as conn:
            return await test(conn, served)
    finally:
        await listener.stop()


async def metadata(conn: Connection) -> dict:
    return (await conn.request(ApiKey.METADATA, 9, {"Topics": []}, timeout=5)).body


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_right_credentials_authenticate_as_user_principal(mechanism) -> None:
    async def test(conn, served):
        done = await authenticate(conn, mechanism, "alice", "alice-secret")
        await metadata(conn)
        return done, served.principals

    done, principals = run(with_listener(test))
    assert done.mechanism == mechanism
    assert done.enabled == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    assert done.session_lifetime_ms == 0
    assert principals == ["User:alice"]


@pytest.mark.parametrize(
    ("mechanism", "user", "password", "message"),
    [
        ("PLAIN", "alice", "wrong", "Authentication failed: Invalid username or password"),
        ("PLAIN", "nobody", "alice-secret", "Authentication failed: Invalid username or password"),
        ("PLAIN", "alice", "", "Authentication failed: password not specified"),
        (
            "SCRAM-SHA-256",
            "alice",
            "wrong",
            "Authentication failed during authentication due to invalid credentials with SASL "
            "mechanism SCRAM-SHA-256",
        ),
        ("SCRAM-SHA-256", "nobody", "x", "Authentication failed: Invalid user credentials"),
    ],
)
def test_wrong_credentials_fail_with_58_then_close(mechanism, user, password, message) -> None:
    async def test(conn, served):
        with pytest.raises(SaslAuthenticationError) as failure:
            await authenticate(conn, mechanism, user, password)
        closed = await conn.wait_closed_by_peer(5)
        return failure.value, closed, served.principals

    failure, closed, principals = run(with_listener(test))
    assert failure.error_code == 58
    assert str(failure) == message
    assert closed, "the connection stays open after a failed authentication"
    assert principals == []


def test_unsupported_mechanism_lists_enabled_ones_then_closes() -> None:
    async def test(conn, served):
        resp = await conn.request(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "GSSAPI"})
        return resp.body, await conn.wait_closed_by_peer(5)

    body, closed = run(with_listener(test, mechanisms=("SCRAM-SHA-256",)))
    assert body == {"ErrorCode": 33, "Mechanisms": ["SCRAM-SHA-256"]}
    assert closed


def test_a_disabled_mechanism_is_unsupported() -> None:
    async def test(conn, served):
        with pytest.raises(SaslAuthenticationError) as failure:
            await authenticate(conn, "PLAIN", "alice", "alice-secret")
        return failure.value.error_code

    assert run(with_listener(test, mechanisms=("SCRAM-SHA-256",))) == 33


def test_no_request_is_served_before_authentication() -> None:
    async def test(conn, served):
        with pytest.raises(ConnectionClosed):
            await metadata(conn)
        return served.principals

    assert run(with_listener(test)) == []


def test_a_request_after_a_half_done_exchange_closes() -> None:
    async def test(conn, served):
        await conn.request(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "SCRAM-SHA-256"})
        first = b"n,,n=alice,r=abcdefghijklmnop"
        resp = await conn.request(ApiKey.SASL_AUTHENTICATE, 2, {"AuthBytes": first})
        assert resp.body["ErrorCode"] == 0 and resp.body["AuthBytes"].startswith(b"r=abcdef")
        with pytest.raises(ConnectionClosed):
            await metadata(conn)
        return served.principals

    assert run(with_listener(test)) == []


def test_authenticate_before_handshake_closes() -> None:
    async def test(conn, served):
        with pytest.raises(ConnectionClosed):
            await conn.request(ApiKey.SASL_AUTHENTICATE, 2, {"AuthBytes": b"\0alice\0alice-secret"})

    run(with_listener(test))


def test_second_handshake_during_an_exchange_closes() -> None:
    async def test(conn, served):
        await conn.request(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"})
        with pytest.raises(ConnectionClosed):
            await conn.request(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"})

    run(with_listener(test))


def test_handshake_v0_is_not_offered() -> None:
    async def test(conn, served):
        versions = await conn.api_versions()
        with pytest.raises(ConnectionClosed):
            await conn.request(ApiKey.SASL_HANDSHAKE, 0, {"Mechanism": "PLAIN"})
        return versions

    versions = run(with_listener(test))
    assert versions[ApiKey.SASL_HANDSHAKE] == (1, 1)
    assert versions[ApiKey.SASL_AUTHENTICATE] == (0, 2)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_every_sasl_authenticate_version_works(version) -> None:
    async def test(conn, served):
        await conn.request(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"})
        token = b"\0bob\0bob-secret"
        resp = await conn.request(ApiKey.SASL_AUTHENTICATE, version, {"AuthBytes": token})
        await metadata(conn)
        return resp.body, served.principals

    body, principals = run(with_listener(test, lifetime_ms=60_000))
    assert body["ErrorCode"] == 0 and body["ErrorMessage"] is None
    assert body.get("SessionLifetimeMs", 0) == (60_000 if version >= 1 else 0)
    assert principals == ["User:bob"]


def test_authzid_other_than_username_is_refused() -> None:
    async def test(conn, served):
        await conn.request(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"})
        resp = await conn.request(
            ApiKey.SASL_AUTHENTICATE, 2, {"AuthBytes": b"bob\0alice\0alice-secret"}
        )
        return resp.body, await conn.wait_closed_by_peer(5)

    body, closed = run(with_listener(test))
    assert body["ErrorCode"] == 58 and "authorization id" in body["ErrorMessage"]
    assert closed


def test_sasl_apis_after_authentication_are_illegal_state() -> None:
    async def test(conn, served):
        await authenticate(conn, "PLAIN", "alice", "alice-secret")
        hs = await conn.request(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"})
        auth = await conn.request(
            ApiKey.SASL_AUTHENTICATE, 2, {"AuthBytes": b"\0alice\0alice-secret"}
        )
        await metadata(conn)
        return hs.body, auth.body

    hs, auth = run(with_listener(test))
    assert hs["ErrorCode"] == 34
    assert auth["ErrorCode"] == 34 and "after successful authentication" in auth["ErrorMessage"]


def test_listener_without_sasl_answers_illegal_state() -> None:
    async def test(conn, served):
        hs = await conn.request(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"})
        await metadata(conn)
        return hs.body, served.principals

    hs, principals = run(with_listener(test, sasl=False))
    assert hs["ErrorCode"] == 34
    assert principals == ["User:ANONYMOUS"]


def test_expired_session_is_closed_unless_reauthenticated() -> None:
    async def test(conn, served):
        done = await authenticate(conn, "SCRAM-SHA-256", "alice", "alice-secret")
        await asyncio.sleep(0.2)
        again = await authenticate(conn, "SCRAM-SHA-256", "alice", "alice-secret")
        await metadata(conn)  # re-authenticated before expiry: still served
        await asyncio.sleep(0.5)
        with pytest.raises(ConnectionClosed):
            await metadata(conn)
        return done, again, served.principals

    done, again, principals = run(with_listener(test, lifetime_ms=400))
    assert done.session_lifetime_ms == again.session_lifetime_ms == 400
    assert principals == ["User:alice"]


def test_reauthentication_cannot_change_principal() -> None:
    async def test(conn, served):
        await authenticate(conn, "PLAIN", "alice", "alice-secret")
        with pytest.raises(SaslAuthenticationError) as failure:
            await authenticate(conn, "PLAIN", "bob", "bob-secret")
        return failure.value, await conn.wait_closed_by_peer(5)

    failure, closed = run(with_listener(test, lifetime_ms=60_000))
    assert failure.error_code == 58 and "Cannot change principals" in str(failure)
    assert closed
