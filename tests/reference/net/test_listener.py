"""The listener's contract: exposure per listener type, version refusal, malformed frames."""

from __future__ import annotations

import asyncio
import struct

import pytest

from conformance.client.wire import Connection, ConnectionClosed
from conformance.protocol import ApiKey, Codec, ErrorCode
from conformance.protocol.framing import decode_response, encode_request
from reference_impl.net.listener import Api, Listener

CODEC = Codec.from_specs()


async def _metadata(ctx, body):
    return {"Brokers": [], "ClusterId": "c", "ControllerId": -1, "Topics": []}


async def _registration(ctx, body):
    return {"ErrorCode": 0, "BrokerEpoch": 1}


def _head(api_key: int, version: int) -> bytes:
    """A request header v1 start: api key, version, correlation id 1 (client id follows)."""
    return struct.pack(">hhi", api_key, version, 1)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


async def _with_listener(listener_type, test):
    listener = Listener(
        "test",
        listener_type,
        CODEC,
        [Api(ApiKey.METADATA, _metadata), Api(ApiKey.BROKER_REGISTRATION, _registration)],
    )
    port = await listener.start()
    try:
        return await test(port)
    finally:
        await listener.stop()


def test_api_versions_lists_only_what_the_listener_type_exposes() -> None:
    async def test(port):
        async with await Connection.open("127.0.0.1", port, codec=CODEC) as conn:
            return await conn.api_versions()

    broker = run(_with_listener("zkBroker", test))
    controller = run(_with_listener("controller", test))
    assert set(broker) == {ApiKey.API_VERSIONS, ApiKey.METADATA}
    assert set(controller) == {ApiKey.API_VERSIONS, ApiKey.BROKER_REGISTRATION}
    # a handler declaring no max_version serves its spec's whole range (issue 37: no 3.9 cap)
    assert broker[ApiKey.METADATA] == (
        0,
        CODEC.message(ApiKey.METADATA, "request").valid_versions.hi,
    )


def test_unknown_api_versions_version_gets_unsupported_version_with_a_v0_body() -> None:
    async def test(port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        frame = encode_request(CODEC, ApiKey.API_VERSIONS, 3, 7, "t", {})
        frame = frame[:2] + struct.pack(">h", 99) + frame[4:]
        writer.write(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        raw = await reader.readexactly(size)
        writer.close()
        return decode_response(CODEC, ApiKey.API_VERSIONS, 0, raw)

    header, body = run(_with_listener("zkBroker", test))
    assert header["CorrelationId"] == 7
    assert body["ErrorCode"] == 35
    assert {k["ApiKey"] for k in body["ApiKeys"]} == {ApiKey.API_VERSIONS, ApiKey.METADATA}


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(
            struct.pack(">hhi", ApiKey.BROKER_REGISTRATION, 0, 1) + b"\x00\x00",
            id="api-not-on-listener",
        ),
        pytest.param(
            struct.pack(">hhi", ApiKey.METADATA, 13, 1) + b"\x00\x00", id="version-out-of-range"
        ),
        pytest.param(struct.pack(">hhi", 999, 0, 1) + b"\x00\x00", id="unknown-api-key"),
        pytest.param(
            struct.pack(">hhih", ApiKey.METADATA, 1, 1, 0) + b"\x7f\xff\xff\xff", id="huge-array"
        ),
    ],
)
def test_bad_requests_close_that_connection_only(bad: bytes) -> None:
    async def test(port):
        other = await Connection.open("127.0.0.1", port, codec=CODEC)
        victim = await Connection.open("127.0.0.1", port, codec=CODEC)
        await victim.send_raw(struct.pack(">i", len(bad)) + bad)
        closed = await victim.wait_closed_by_peer(5)
        response = await other.request(ApiKey.METADATA, 1, {"Topics": None})
        await other.close()
        await victim.close()
        return closed, response.body

    closed, body = run(_with_listener("zkBroker", test))
    assert closed
    assert body["ClusterId"] is None  # v1 has no cluster id; the other connection still works


def test_oversized_frame_closes_the_connection() -> None:
    async def test(port):
        conn = await Connection.open("127.0.0.1", port, codec=CODEC)
        await conn.send_raw(struct.pack(">i", 2**31 - 1) + b"\x00" * 16)
        closed = await conn.wait_closed_by_peer(5)
        await conn.close()
        return closed

    assert run(_with_listener("zkBroker", test))


def test_pipelined_requests_are_answered_in_order() -> None:
    async def test(port):
        async with await Connection.open("127.0.0.1", port, codec=CODEC) as conn:
            results = await asyncio.gather(
                *(conn.request(ApiKey.METADATA, v % 13, {"Topics": []}) for v in range(40))
            )
            return [r.correlation_id for r in results]

    ids = run(_with_listener("zkBroker", test))
    assert ids == sorted(ids) and len(set(ids)) == 40


def test_a_closed_connection_fails_pending_requests() -> None:
    async def test(port):
        conn = await Connection.open("127.0.0.1", port, codec=CODEC)
        await conn.send_raw(struct.pack(">i", 12) + struct.pack(">hhi", 999, 0, 1) + b"\0\0")
        with pytest.raises(ConnectionClosed):
            await conn.request(ApiKey.METADATA, 1, {"Topics": None}, timeout=5)
        await conn.close()
        return True

    assert run(_with_listener("zkBroker", test))


def test_bytes_after_a_well_formed_body_are_ignored_like_kafka() -> None:
    async def test(port):
        async with await Connection.open("127.0.0.1", port, codec=CODEC) as conn:
            frame = encode_request(CODEC, ApiKey.METADATA, 12, 5, "t", {"Topics": None}) + b"\0\0\0"
            fut = conn.send_frame(frame, ApiKey.METADATA, 12, 5)
            return (await asyncio.wait_for(fut, 5)).body

    assert run(_with_listener("zkBroker", test))["ClusterId"] == "c"


def test_api_versions_v5_sends_a_client_expecting_another_broker_to_bootstrap_again() -> None:
    """v5's ClusterId and NodeId (Kafka 4.4.0): another cluster, or another node of it, is
    REBOOTSTRAP_REQUIRED listing no API; with no cluster id given nothing is compared, and a
    listener without an identity (a controller's) compares nothing."""

    async def main():
        listener = Listener("test", "broker", CODEC, [], identity=lambda: ("abc", 2))
        port = await listener.start()
        conn = await Connection.open("127.0.0.1", port, codec=CODEC)
        software = {"ClientSoftwareName": "kc", "ClientSoftwareVersion": "1"}
        try:
            for cid, nid, code in (
                ("abc", 2, 0),
                (None, 7, 0),
                ("abc", 3, ErrorCode.REBOOTSTRAP_REQUIRED),
                ("abc", -1, ErrorCode.REBOOTSTRAP_REQUIRED),
                ("xyz", 2, ErrorCode.REBOOTSTRAP_REQUIRED),
            ):
                body = {**software, "ClusterId": cid, "NodeId": nid}
                resp = await conn.request(ApiKey.API_VERSIONS, 5, body)
                assert resp.body["ErrorCode"] == code, (cid, nid)
                assert bool(resp.body["ApiKeys"]) == (code == 0), (cid, nid)
            ranges = await conn.request(ApiKey.API_VERSIONS, 4, software)
            assert {k["ApiKey"]: k["MaxVersion"] for k in ranges.body["ApiKeys"]} == {
                ApiKey.API_VERSIONS: 5
            }
        finally:
            await conn.close()
            await listener.stop()
        plain = Listener("test", "controller", CODEC, [])
        port = await plain.start()
        conn = await Connection.open("127.0.0.1", port, codec=CODEC)
        try:
            body = {**software, "ClusterId": "xyz", "NodeId": 9}
            assert (await conn.request(ApiKey.API_VERSIONS, 5, body)).body["ErrorCode"] == 0
        finally:
            await conn.close()
            await plain.stop()

    run(main())
