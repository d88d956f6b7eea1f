"""An asyncio connection speaking Kafka's framing: size-prefixed requests, matched responses.

Requests may be pipelined; responses are matched by correlation id (Kafka answers in order per
connection, and a mismatch is reported, not trusted). Raw frames can be sent too, for the
robustness tests that must send what no well-behaved client would.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
from collections.abc import Callable
from dataclasses import dataclass

from conformance.protocol import ApiKey, Codec
from conformance.protocol.framing import (
    decode_header_prefix,
    encode_request,
    response_header_version,
)

_SIZE = struct.Struct(">i")
#: Largest response frame accepted (Kafka's default socket.request.max.bytes is 100 MiB).
MAX_FRAME = 100 * 1024 * 1024


#: when set, called after each :meth:`Connection.request` with the API key, version, request body
#: and the Response (or the exception it ended with): how the differential mode records what the
#: state-machine models exchange with a target (``conformance.diff.models``); None otherwise
on_exchange: Callable[[int, int, dict, object], None] | None = None


class ConnectionClosed(ConnectionError):
    """The peer closed the connection (or it broke) before answering."""


class ProtocolViolation(ConnectionError):
    """The peer answered with something that is not a valid response to what was sent."""


@dataclass(frozen=True)
class Response:
    correlation_id: int
    header: dict
    body: dict
    raw: bytes


class Connection:
    """One TCP connection to a Kafka-compatible node."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        codec: Codec,
        client_id: str | None,
    ) -> None:
        self.reader, self.writer, self.codec, self.client_id = reader, writer, codec, client_id
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[int, int, asyncio.Future]] = {}
        self._order: list[int] = []
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())
        self.closed = False
        #: why the connection closed (the peer, or an answer that broke the protocol)
        self.close_reason: Exception | None = None

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        codec: Codec,
        client_id: str | None = "kafka-conformance",
        timeout: float = 10.0,
    ) -> Connection:
        # asyncio.timeout, not wait_for: Python 3.11's wait_for returns an inner result that
        # is ready when the waiter is cancelled, swallowing the cancellation
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, codec, client_id)

    async def request(
        self, api_key: int, version: int, body: dict, *, timeout: float = 30.0
    ) -> Response:
        """Send a request and wait for its response (decoded with the matching header version)."""
        cid = next(self._ids) & 0x7FFFFFFF
        frame = encode_request(self.codec, api_key, version, cid, self.client_id, body)
        fut = self.send_frame(frame, api_key, version, cid)
        if on_exchange is None:
            async with asyncio.timeout(timeout):
                return await fut
        try:
            async with asyncio.timeout(timeout):
                resp = await fut
        except Exception as e:
            on_exchange(api_key, version, body, e)
            raise
        on_exchange(api_key, version, body, resp)
        return resp

    def send_frame(self, frame: bytes, api_key: int, version: int, cid: int) -> asyncio.Future:
        """Send an already-encoded request (header + body) and return the future of its answer."""
        if self.closed:
            why = f" ({self.close_reason})" if self.close_reason is not None else ""
            raise ConnectionClosed(f"connection already closed{why}")
        fut = asyncio.get_running_loop().create_future()
        self._pending[cid] = (api_key, version, fut)
        self._order.append(cid)
        self.writer.write(_SIZE.pack(len(frame)) + frame)
        return fut

    async def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (no size prefix added): for malformed-input tests."""
        self.writer.write(data)
        await self.writer.drain()

    async def wait_closed_by_peer(self, timeout: float) -> bool:
        """True when the peer closes the connection within ``timeout`` seconds."""
        try:
            await asyncio.wait_for(asyncio.shield(self._reader_task), timeout)
        except TimeoutError:
            return False
        return self.closed

    async def _read_loop(self) -> None:
        try:
            while True:
                head = await self.reader.readexactly(4)
                (size,) = _SIZE.unpack(head)
                if not 4 <= size <= MAX_FRAME:
                    raise ProtocolViolation(f"response frame size {size} out of range")
                raw = await self.reader.readexactly(size)
                self._deliver(raw)
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as e:
            self._fail_all(e if isinstance(e, ProtocolViolation) else ConnectionClosed(str(e)))
        except asyncio.CancelledError:
            self._fail_all(ConnectionClosed("connection closed locally"))
            raise

    def _deliver(self, raw: bytes) -> None:
        (cid,) = _SIZE.unpack_from(raw, 0)
        if not self._order:
            raise ProtocolViolation(f"unsolicited response with correlation id {cid}")
        expected = self._order.pop(0)
        api_key, version, fut = self._pending.pop(expected)
        if cid != expected:
            fut.set_exception(
                ProtocolViolation(f"response correlation id {cid}, expected {expected}")
            )
            return
        try:
            hv = response_header_version(self.codec, api_key, version)
            unit = self.codec.compiled_header("response", hv)
            header, off = decode_header_prefix(unit, raw)
            body = self.codec.decode(api_key, version, "response", raw[off:])
        except Exception as e:
            if not fut.done():
                fut.set_exception(e)
            return
        if not fut.done():
            fut.set_result(Response(cid, header, body, raw))

    def _fail_all(self, exc: Exception) -> None:
        self.closed = True
        self.close_reason = self.close_reason or exc
        for _, _, fut in self._pending.values():
            if not fut.done():
                fut.set_exception(exc)
        self._pending.clear()
        self._order.clear()

    async def api_versions(
        self, version: int = 3, *, timeout: float = 30.0
    ) -> dict[int, tuple[int, int]]:
        """ApiVersions: api key -> (min, max) the peer advertises on this listener."""
        body = {"ClientSoftwareName": "kafka-conformance", "ClientSoftwareVersion": "0.1.0"}
        resp = await self.request(ApiKey.API_VERSIONS, version, body, timeout=timeout)
        return {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in resp.body["ApiKeys"]}

    async def close(self) -> None:
        if not self._reader_task.done():
            self._reader_task.cancel()
        self.closed = True
        self.writer.close()
        # Wait for the socket's close and the reader's end without taking on their outcomes,
        # in a task of its own: a cancellation of the caller (a stopping node's fetcher, say)
        # reaches the caller, is never swallowed, and does not cancel the shared close waiter
        # that a later close() would then trip over.
        closed = asyncio.ensure_future(self.writer.wait_closed())
        closed.add_done_callback(_outcome_seen)
        await asyncio.wait([closed, self._reader_task])

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _outcome_seen(task: asyncio.Future) -> None:
    """A connection reset while closing is no news (and must not be logged as unretrieved)."""
    if not task.cancelled():
        task.exception()


def pick_version(advertised: dict[int, tuple[int, int]], codec: Codec, api_key: int) -> int | None:
    """The highest version both the peer and our specs know (the client's bodies are written for
    every version: topics by name and by id), or None when they share none."""
    if api_key not in advertised:
        return None
    lo, hi = advertised[api_key]
    ours = codec.message(api_key, "request").valid_versions
    top = min(hi, ours.hi)
    return top if top >= max(lo, ours.lo) else None
