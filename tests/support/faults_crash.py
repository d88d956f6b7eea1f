"""A target that crashes at a chosen request: its listener closes and every connection drops.

:class:`CrashProxy` sits in front of a good target. At the request ``crash_when`` picks (the Nth
request, the first of an API, a malformed frame ...) it does not forward that request; it closes
its listener (new connections are refused) and aborts every open connection at once, the way a
broker process that aborts looks from the outside. ``on_crash`` may also stop what is behind it
(a reference broker, by pid). ``reopen`` listens again on the same port, for a target whose
restart brings the proxy back too; it does not crash a second time unless ``rearm``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from conformance.protocol import ApiKey
from tests.support.proxies import FaultyProxy, passthrough

#: crash_when(n, api key, version, request frame without its size): n counts requests from 1
CrashWhen = Callable[[int, int, int, bytes], bool]
#: the body protocol/robustness/invalid-varint sends: a topic array whose length is a 7-byte varint
INVALID_VARINT = b"\xff\xff\xff\xff\xff\xff\x7f"


def at_request(n: int) -> CrashWhen:
    """Crash at the ``n``-th request the proxy sees (counted over all connections)."""
    return lambda count, api, version, frame: count == n


def on_invalid_varint(count: int, api: int, version: int, frame: bytes) -> bool:
    """Crash at a Metadata request carrying an invalid varint
    (protocol/robustness/invalid-varint)."""
    return api == ApiKey.METADATA and frame.endswith(INVALID_VARINT)


class CrashProxy(FaultyProxy):
    def __init__(
        self,
        upstream: tuple[str, int],
        crash_when: CrashWhen,
        on_crash: Callable[[], None] | None = None,
        *,
        rearm: bool = False,
    ) -> None:
        super().__init__(upstream, passthrough, self._request)
        self.crash_when, self.on_crash, self.rearm = crash_when, on_crash, rearm
        self.requests = 0
        #: (request number, api key, version) of each crash
        self.crashes: list[tuple[int, int, int]] = []
        self.armed = True
        self._writers: set[asyncio.StreamWriter] = set()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            await super()._client(reader, writer)
        finally:
            self._writers.discard(writer)

    def _request(self, api: int, version: int, frame: bytes) -> bytes | None:
        self.requests += 1
        if self.armed and self.crash_when(self.requests, api, version, frame):
            self._crash(api, version)
            return None  # never forwarded: the crash took it
        return frame

    def _crash(self, api: int, version: int) -> None:
        """On the proxy's loop: stop listening, drop every connection, then ``on_crash``."""
        self.armed = False
        self.crashes.append((self.requests, api, version))
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        if self.on_crash is not None:
            self.on_crash()

    def reopen(self) -> None:
        """Listen again on the same port (from any thread but the proxy's)."""

        async def listen() -> asyncio.Server:
            return await asyncio.start_server(self._client, "127.0.0.1", self.port)

        self._server = asyncio.run_coroutine_threadsafe(listen(), self.loop).result(10)
        self.armed = self.rearm
