"""Connections from a broker to its peers on the inter-broker listener, for one API.

The transaction coordinator's markers (WriteTxnMarkers to partition leaders) and a leader's
transaction verification (AddPartitionsToTxn to the coordinator) each keep one connection per
peer broker, authenticated as the broker principal (``security_hooks.connect``), and the
highest version of their API both sides speak. A peer that does not advertise the API (in the
range asked) is asked again on the next use: it may have been upgraded.
"""

from __future__ import annotations

import asyncio
import contextlib

from conformance.client.wire import Connection, pick_version
from reference_impl import security_hooks
from reference_impl.roles import BrokerView

CONNECT_TIMEOUT_S = 5.0


class PeerConnections:
    """One connection per peer broker id, with the version of ``api_key`` to send."""

    def __init__(
        self,
        node: BrokerView,
        api_key: int,
        client_id: str,
        *,
        min_version: int = 0,
        max_version: int | None = None,
    ) -> None:
        self.node = node
        self.api_key = api_key
        self.client_id = client_id
        self.min_version = min_version
        self.max_version = max_version
        self.conns: dict[int, tuple[Connection, int | None]] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    async def get(self, broker_id: int) -> tuple[Connection, int | None]:
        """The connection to ``broker_id`` and the version to use (None: the peer does not
        serve the API; that connection is already closed). Raises ConnectionError/OSError."""
        lock = self._locks.setdefault(broker_id, asyncio.Lock())
        async with lock:
            known = self.conns.get(broker_id)
            if known is not None and not known[0].closed:
                return known
            listener = self.node.config.inter_broker_listener or "INTERNAL"
            endpoint = self.node.metadata_cache.endpoint(broker_id, listener)
            if endpoint is None:
                raise ConnectionError(f"no {listener} endpoint known for broker {broker_id}")
            conn = await security_hooks.connect(
                endpoint.host,
                endpoint.port,
                codec=self.node.codec,
                client_id=self.client_id,
                timeout=CONNECT_TIMEOUT_S,
            )
            try:
                versions = await conn.api_versions()
            except BaseException:
                await conn.close()
                raise
            top = pick_version(versions, self.node.codec, self.api_key)
            if top is not None and self.max_version is not None:
                top = min(top, self.max_version)
            version = top if top is not None and top >= self.min_version else None
            if version is None:
                await conn.close()
                return conn, None
            self.conns[broker_id] = (conn, version)
            return conn, version

    async def drop(self, broker_id: int) -> None:
        """Forget (and close) the connection to ``broker_id`` after it failed."""
        known = self.conns.pop(broker_id, None)
        if known is not None:
            with contextlib.suppress(Exception):
                await known[0].close()
