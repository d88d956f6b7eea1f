"""A ZooKeeper session (kazoo) driven from asyncio, and the znodes every node reads.

kazoo runs its own thread: calls go through ``call`` (a worker thread), and its session events
come back onto the event loop. A session that expires (ephemeral znodes gone) is replaced by
kazoo with a new one; ``on_new_session`` callbacks then re-create what the node had
registered. ``H:P/chroot`` puts every path under the chroot (created when absent).

Kafka's layout, shared by controller and brokers: ``/cluster/id`` (KIP-78: JSON with version
and id, created by whoever first can: create-if-absent), ``/controller`` (the active
controller's id, ephemeral) and ``/controller_epoch``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.retry import KazooRetry

from reference_impl import cluster_id as kip78

log = logging.getLogger(__name__)

CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"


class ZooKeeperError(Exception):
    pass


def split_connect(connect: str) -> tuple[str, str]:
    """``H:P[,H:P…][/chroot]`` -> (hosts, chroot without trailing slash, "" for none)."""
    hosts, slash, chroot = connect.partition("/")
    chroot = ("/" + chroot).rstrip("/") if slash else ""
    return hosts, chroot


class ZooKeeper:
    def __init__(self, connect: str, session_timeout_ms: int) -> None:
        hosts, self.chroot = split_connect(connect)
        self.client = KazooClient(
            hosts=hosts,
            timeout=session_timeout_ms / 1000,
            connection_retry=KazooRetry(max_tries=-1, delay=0.05, max_delay=1.0),
            command_retry=KazooRetry(max_tries=5, delay=0.05, max_delay=1.0),
        )
        self.loop: asyncio.AbstractEventLoop | None = None
        self._session_id: int | None = None
        self._new_session: list[Callable[[], Awaitable[None]]] = []
        self._lost: list[Callable[[], None]] = []
        self._tasks: set[asyncio.Task] = set()
        self._closing = False

    def path(self, p: str) -> str:
        return self.chroot + p

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def start(self, timeout: float = 15.0) -> None:
        self.loop = asyncio.get_running_loop()
        try:
            await self.call(self.client.start, timeout)
        except Exception as e:
            raise ZooKeeperError(
                f"cannot connect to ZooKeeper at {self.client.hosts}: {e}"
            ) from None
        self._session_id = self.client.client_id[0]
        self.client.add_listener(self._state)
        if self.chroot:
            await self.call(self.client.ensure_path, self.chroot)

    def on_new_session(self, callback: Callable[[], Awaitable[None]]) -> None:
        """``callback`` runs (on the loop) whenever an expired session has been replaced."""
        self._new_session.append(callback)

    def on_session_lost(self, callback: Callable[[], None]) -> None:
        """``callback`` runs (on the loop) when the session expires: ephemerals are gone."""
        self._lost.append(callback)

    def _state(self, state: str) -> None:
        """kazoo's thread: hand session events to the loop."""
        if self._closing or self.loop is None or self.loop.is_closed():
            return
        if state == KazooState.LOST:
            self.loop.call_soon_threadsafe(self._session_lost)
        elif state == KazooState.CONNECTED:
            self.loop.call_soon_threadsafe(self._connected)

    def _session_lost(self) -> None:
        log.warning("ZooKeeper session lost")
        for callback in self._lost:
            callback()

    def _connected(self) -> None:
        session = self.client.client_id[0] if self.client.client_id else None
        if session is None or session == self._session_id:
            return
        log.warning("new ZooKeeper session 0x%x: registering again", session)
        self._session_id = session
        for callback in self._lost:
            callback()
        for callback in self._new_session:
            task = self.loop.create_task(callback())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @property
    def session_id(self) -> int | None:
        return self._session_id

    async def get_json(self, path: str) -> tuple[Any, Any] | None:
        """(parsed data, stat) of a znode, or None when it does not exist."""
        try:
            data, stat = await self.call(self.client.get, self.path(path))
        except NoNodeError:
            return None
        try:
            return json.loads(data.decode("utf-8")), stat
        except (ValueError, UnicodeDecodeError):
            return None, stat

    async def cluster_id(self) -> str:
        """KIP-78 get-or-generate: read ``/cluster/id``; create it when absent (one winner)."""
        while True:
            found = await self.get_json(CLUSTER_ID)
            if found is not None:
                value, _ = found
                if not isinstance(value, dict) or not isinstance(value.get("id"), str):
                    raise ZooKeeperError(f"{self.path(CLUSTER_ID)} is not cluster id JSON")
                return value["id"]
            new_id = kip78.generate()
            data = json.dumps({"version": 1, "id": new_id}).encode()
            try:
                await self.call(self.client.create, self.path(CLUSTER_ID), data, makepath=True)
                log.info("created %s: %s", self.path(CLUSTER_ID), new_id)
                return new_id
            except NodeExistsError:
                continue

    async def active_controller(self) -> int | None:
        found = await self.get_json(CONTROLLER)
        if found is None or not isinstance(found[0], dict):
            return None
        broker_id = found[0].get("brokerid")
        return broker_id if isinstance(broker_id, int) else None

    async def close(self) -> None:
        self._closing = True
        self._new_session.clear()
        self._lost.clear()
        for task in list(self._tasks):
            task.cancel()
        try:
            await self.call(self.client.stop)
            await self.call(self.client.close)
        except Exception as e:
            log.debug("closing ZooKeeper: %r", e)
