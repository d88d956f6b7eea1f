"""The wire client: a connection closed because the peer broke the protocol says why, on every
later request (so a check can tell "the target answered what it must not" from a plain close,
whichever came first: the broken answer or the next request)."""

from __future__ import annotations

import asyncio

import pytest

from conformance.client.wire import Connection, ConnectionClosed
from conformance.protocol import ApiKey, Codec

CODEC = Codec.from_specs().strict()
UNASKED = 0x7FFF0000


def test_a_request_after_an_unsolicited_answer_names_it() -> None:
    async def main() -> str:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readexactly(5)  # a request nobody expects an answer to
            writer.write((8).to_bytes(4, "big") + UNASKED.to_bytes(4, "big") + bytes(4))
            await writer.drain()
            await reader.read()  # until the client goes
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        conn = await Connection.open("127.0.0.1", port, codec=CODEC)
        try:
            await conn.send_raw((1).to_bytes(4, "big") + b"x")
            async with asyncio.timeout(5):
                while not conn.closed:
                    await asyncio.sleep(0.01)
            with pytest.raises(ConnectionClosed) as caught:
                body = {"Topics": [], "AllowAutoTopicCreation": False}
                await conn.request(ApiKey.METADATA, 12, body, timeout=5)
            return str(caught.value)
        finally:
            await conn.close()
            server.close()
            await server.wait_closed()

    message = asyncio.run(main())
    assert "already closed" in message
    assert f"unsolicited response with correlation id {UNASKED}" in message
