"""The broker's channel to the active controller, with rediscovery on NOT_CONTROLLER.

``await channel.request(api_key, body, version=None, timeout=…)`` sends on the controller
listener at the highest version both sides speak and returns the response. When the
connection fails, or the response's top-level ErrorCode is NOT_CONTROLLER, the channel
rediscovers the controller (ZooKeeper mode: the id in ``/controller``; otherwise the next
configured controller) and tries again, until the timeout; then TimeoutError.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from conformance.client.wire import Connection, Response, pick_version
from conformance.protocol import Codec, ErrorCode
from reference_impl import security_hooks
from reference_impl.config import ControllerAddress

log = logging.getLogger(__name__)


class ControllerChannel:
    def __init__(
        self,
        codec: Codec,
        controllers: list[ControllerAddress],
        client_id: str,
        discover: Callable[[], Awaitable[int | None]] | None = None,
        attempt_timeout: float = 10.0,
    ) -> None:
        if not controllers:
            raise ValueError("no controllers configured")
        self.codec = codec
        self.controllers = controllers
        self.client_id = client_id
        self.discover = discover
        #: how long one attempt waits for an answer (a paused controller accepts connections)
        self.attempt_timeout = attempt_timeout
        #: called with the controller id whenever the channel connects to a controller
        self.on_connected: Callable[[int], None] | None = None
        self._index = 0
        self._conn: Connection | None = None
        self._versions: dict[int, tuple[int, int]] = {}
        self._lock = asyncio.Lock()
        #: the controller node id the channel talks to (None while unknown)
        self.controller_id: int | None = None
        self._closing: asyncio.Task | None = None

    async def _connection(self) -> Connection:
        async with self._lock:
            if self._conn is not None and not self._conn.closed:
                return self._conn
            if self.discover is not None:
                active = await self.discover()
                for i, c in enumerate(self.controllers):
                    if c.node_id == active:
                        self._index = i
            target = self.controllers[self._index]
            conn = await security_hooks.connect(
                target.host, target.port, codec=self.codec, client_id=self.client_id, timeout=2.0
            )
            try:
                self._versions = await conn.api_versions()
            except BaseException:
                await conn.close()
                raise
            self._conn = conn
            self.controller_id = target.node_id
        if self.on_connected is not None:
            self.on_connected(target.node_id)
        return conn

    def version(self, api_key: int) -> int | None:
        return pick_version(self._versions, self.codec, api_key)

    def follow(self, controller_id: int) -> None:
        """Another channel found the active controller: leave a different one at once (what is
        pending on it fails and is retried with the one that answers)."""
        if self._conn is not None and self.controller_id not in (None, controller_id):
            log.info(
                "controller %s is no longer active: following %d", self.controller_id, controller_id
            )
            conn, self._conn = self._conn, None
            self.controller_id = None
            self._closing = asyncio.get_running_loop().create_task(conn.close())

    async def rediscover(self) -> None:
        """Drop the connection and move to the next candidate controller."""
        conn, self._conn = self._conn, None
        self.controller_id = None
        if self.discover is None:
            self._index = (self._index + 1) % len(self.controllers)
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()

    async def request(
        self,
        api_key: int,
        body: dict[str, Any],
        *,
        version: int | None = None,
        timeout: float = 30.0,
    ) -> Response:
        deadline = time.monotonic() + timeout
        backoff = 0.02
        last: BaseException | None = None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"controller not reachable for api {api_key}: {last!r}")
            try:
                async with asyncio.timeout(remaining):
                    conn = await self._connection()
                v = version if version is not None else self.version(api_key)
                if v is None:
                    raise ConnectionError(f"the controller does not serve api {api_key}")
                attempt = max(min(remaining, self.attempt_timeout), 0.001)
                resp = await conn.request(api_key, v, body, timeout=attempt)
                if resp.body.get("ErrorCode") != ErrorCode.NOT_CONTROLLER:
                    return resp
                last = ConnectionError("NOT_CONTROLLER")
            except (ConnectionError, OSError, TimeoutError) as e:
                last = e
            await self.rediscover()
            await asyncio.sleep(min(backoff, max(deadline - time.monotonic(), 0)))
            backoff = min(backoff * 2, 0.5)

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()
