"""Small TCP proxies that put a deliberately broken target in front of a good one.

The proxy reads Kafka frames both ways, remembers each request's (api key, version) by
correlation id, and lets a fault function rewrite each response frame. It listens on a free
loopback port in a background thread and is stopped by the test that started it.
"""

from __future__ import annotations

import asyncio
import struct
import threading
from collections.abc import Callable

from conformance.client.ports import free_port

SIZE = struct.Struct(">i")
#: the largest request frame the proxy reads whole (the suite's requests are far smaller)
MAX_FRAME = 1 << 20
#: fault(api_key, version, response frame without its size) -> new frame
Fault = Callable[[int, int, bytes], bytes]


class FaultyProxy:
    def __init__(
        self,
        upstream: tuple[str, int],
        fault: Fault,
        request_fault: Callable[[int, int, bytes], bytes | None] | None = None,
    ) -> None:
        self.upstream, self.fault = upstream, fault
        #: rewrites each whole request frame (without its size) before it goes upstream; None
        #: from it swallows the request (never forwarded, so never answered)
        self.request_fault = request_fault
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self.rewritten = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> FaultyProxy:
        self._thread.start()
        fut = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._client, "127.0.0.1", self.port), self.loop
        )
        self._server = fut.result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        pending: dict[int, tuple[int, int]] = {}
        tasks = [
            asyncio.create_task(self._requests(reader, up_writer, pending)),
            asyncio.create_task(self._responses(up_reader, writer, pending)),
        ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in tasks:
            t.cancel()
        for w in (writer, up_writer):
            w.close()

    async def _requests(self, reader, up_writer, pending) -> None:
        """Forward requests byte for byte, noting (api, version) of each whole frame."""
        while True:
            head = await reader.read(4)
            if not head:
                return
            if len(head) < 4:
                up_writer.write(head)
                await up_writer.drain()
                continue
            (size,) = SIZE.unpack(head)
            if not 0 <= size <= MAX_FRAME:
                # no frame the proxy would hold (negative, or announcing more than it reads):
                # passed on as it is, for the target behind to refuse
                up_writer.write(head)
                await up_writer.drain()
                continue
            body = await reader.read(size) if size > 0 else b""
            while len(body) < size:
                more = await reader.read(size - len(body))
                if not more:
                    break
                body += more
            if len(body) >= 8:
                api, version, cid = struct.unpack_from(">hhi", body, 0)
                pending[cid] = (api, version)
                if self.request_fault is not None:
                    new = self.request_fault(api, version, body)
                    if new is None:
                        pending.pop(cid, None)
                        continue
                    if new != body:
                        self.rewritten += 1
                        body, head = new, SIZE.pack(len(new))
            up_writer.write(head + body)
            await up_writer.drain()

    async def _responses(self, up_reader, writer, pending) -> None:
        while True:
            head = await up_reader.readexactly(4)
            (size,) = SIZE.unpack(head)
            frame = await up_reader.readexactly(size)
            (cid,) = struct.unpack_from(">i", frame, 0)
            api_version = pending.pop(cid, None)
            if api_version is not None:
                new = self.fault(api_version[0], api_version[1], frame)
                if new != frame:
                    self.rewritten += 1
                frame = new
            writer.write(SIZE.pack(len(frame)) + frame)
            await writer.drain()


def passthrough(api: int, version: int, frame: bytes) -> bytes:
    return frame
