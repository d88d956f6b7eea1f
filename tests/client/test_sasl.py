"""The suite's SASL client (``conformance/client/sasl.py``) against a SASL listener in process.

What it must do as a client: pick SaslHandshake v1 and the newest SaslAuthenticate from
ApiVersions, run PLAIN and both SCRAMs (verifying the server's SCRAM signature), and turn
refusals into ``SaslAuthenticationError`` with Kafka's error code and message.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from conformance.client.sasl import (
    SaslAuthenticationError,
    authenticate,
    open_authenticated,
)
from conformance.client.wire import Connection
from conformance.protocol import ApiKey, Codec
from reference_impl.handlers import sasl_authenticate, sasl_handshake
from reference_impl.net.listener import Api, Listener
from reference_impl.security.sasl import Credentials, SaslSecurity

CODEC = Codec.from_specs().strict()


class Recorder:
    def __init__(self) -> None:
        self.requests: list[tuple[int, int]] = []

    def wrap(self, api: Api) -> Api:
        inner = api.handler

        async def handler(ctx, body):
            self.requests.append((ctx.api_key, ctx.version))
            return await inner(ctx, body)

        return replace(api, handler=handler)


async def _metadata(ctx, body):
    return {"Brokers": [], "ClusterId": ctx.session.principal, "ControllerId": -1, "Topics": []}


def run_with(test, credentials: Credentials, *, sasl_apis: bool = True):
    async def go():
        recorder = Recorder()
        apis = [Api(ApiKey.METADATA, _metadata)]
        if sasl_apis:
            apis += [
                recorder.wrap(sasl_handshake.api(None)),
                recorder.wrap(sasl_authenticate.api(None)),
            ]
        security = SaslSecurity(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"], credentials)
        listener = Listener("test", "zkBroker", CODEC, apis, security=security)
        port = await listener.start()
        try:
            return await test(port, recorder)
        finally:
            await listener.stop()

    return asyncio.run(asyncio.wait_for(go(), 30))


CREDENTIALS = Credentials({"alice": "alice-secret"})


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_authenticates_with_the_newest_versions(mechanism) -> None:
    async def test(port, recorder):
        conn = await open_authenticated(
            "127.0.0.1",
            port,
            codec=CODEC,
            mechanism=mechanism,
            username="alice",
            password="alice-secret",
        )
        async with conn:
            resp = await conn.request(ApiKey.METADATA, 12, {"Topics": []})
        return resp.body["ClusterId"], recorder.requests

    principal, requests = run_with(test, CREDENTIALS)
    assert principal == "User:alice"
    rounds = 1 if mechanism == "PLAIN" else 2
    assert requests == [(17, 1)] + [(36, 2)] * rounds


def test_a_forged_scram_server_signature_is_detected() -> None:
    """A server that does not know the password's server key cannot complete SCRAM."""
    forged = Credentials({"alice": "alice-secret"})
    real = forged.scram("alice")
    forged._scram["SCRAM-SHA-256", "alice"] = replace(real, server_key=bytes(len(real.server_key)))

    async def test(port, recorder):
        async with await Connection.open("127.0.0.1", port, codec=CODEC) as conn:
            with pytest.raises(SaslAuthenticationError) as failure:
                await authenticate(conn, "SCRAM-SHA-256", "alice", "alice-secret")
            return failure.value

    failure = run_with(test, forged)
    assert failure.error_code is None and "did not verify" in str(failure)


def test_refusals_carry_kafka_codes_and_close_the_connection() -> None:
    async def test(port, recorder):
        with pytest.raises(SaslAuthenticationError) as wrong:
            await open_authenticated(
                "127.0.0.1", port, codec=CODEC, mechanism="PLAIN", username="alice", password="x"
            )
        async with await Connection.open("127.0.0.1", port, codec=CODEC) as conn:
            resp = await conn.request(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "GSSAPI"})
            closed = await conn.wait_closed_by_peer(5)
        return wrong.value, resp.body, closed

    wrong, handshake, closed = run_with(test, CREDENTIALS)
    assert wrong.error_code == 58
    assert str(wrong) == "Authentication failed: Invalid username or password"
    assert handshake == {"ErrorCode": 33, "Mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]}
    assert closed


def test_unknown_mechanism_is_refused_before_any_request() -> None:
    async def test(port, recorder):
        async with await Connection.open("127.0.0.1", port, codec=CODEC) as conn:
            with pytest.raises(ValueError, match="unsupported SASL mechanism"):
                await authenticate(conn, "GSSAPI", "alice", "x", versions={})
        return recorder.requests

    assert run_with(test, CREDENTIALS) == []


def test_a_server_without_sasl_apis_is_reported() -> None:
    async def test(port, recorder):
        async with await Connection.open("127.0.0.1", port, codec=CODEC) as conn:
            with pytest.raises(SaslAuthenticationError, match="SaslHandshake v1"):
                await authenticate(conn, "PLAIN", "alice", "alice-secret")

    run_with(test, CREDENTIALS, sasl_apis=False)
