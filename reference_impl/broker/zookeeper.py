"""A broker's ZooKeeper duties (``zookeeper://`` store): cluster id, ``/brokers/ids/N``, discovery.

The broker gets-or-creates ``/cluster/id`` like Kafka's ZooKeeper brokers (KIP-78), registers
the ephemeral ``/brokers/ids/N`` in Kafka's JSON with ``timestamp`` = its KIP-536 start time
(again after a lost session), and reads ``/controller`` to find the active controller. It never
writes configuration (KIP-590): topics, configs and ``/cluster/brokers/N`` are the controller's.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Protocol

from kazoo.exceptions import NodeExistsError

from reference_impl.config import NodeConfig
from reference_impl.net.listener import Listener
from reference_impl.process import NodeFatal
from reference_impl.zk import ZooKeeper, ZooKeeperError

log = logging.getLogger(__name__)


class ZooKeeperHost(Protocol):
    """What the broker's ZooKeeper registration uses of its broker (``broker.ZooKeeperHost``)."""

    node_id: int
    config: NodeConfig
    listeners: list[Listener]
    start_time_ms: int

    def fail(self, reason: str) -> None: ...


def broker_znode(broker: ZooKeeperHost) -> dict:
    """Kafka's /brokers/ids/N JSON (version 5)."""
    config = broker.config
    ports = {lst.name: lst.port for lst in broker.listeners}
    first = config.listeners[0]
    return {
        "listener_security_protocol_map": {
            lst.name: lst.security_protocol for lst in config.listeners
        },
        "endpoints": [f"{lst.name}://{lst.host}:{ports[lst.name]}" for lst in config.listeners],
        "rack": config.rack,
        "jmx_port": -1,
        "features": {},
        "host": first.host,
        "port": ports[first.name],
        "timestamp": str(broker.start_time_ms),
        "version": 5,
    }


class BrokerZooKeeper:
    def __init__(self, broker: ZooKeeperHost) -> None:
        self.broker = broker
        self.zk = ZooKeeper(broker.config.zookeeper or "", broker.config.zk_session_timeout_ms)
        self.registered = False

    async def start(self) -> None:
        try:
            await self.zk.start()
        except ZooKeeperError as e:
            raise NodeFatal(str(e)) from None
        self.zk.on_new_session(self._register_again)

    async def cluster_id(self) -> str:
        try:
            return await self.zk.cluster_id()
        except ZooKeeperError as e:
            raise NodeFatal(str(e)) from None

    async def active_controller(self) -> int | None:
        try:
            return await self.zk.active_controller()
        except Exception as e:
            log.debug("reading /controller: %r", e)
            return None

    async def register(self) -> None:
        """Create the ephemeral /brokers/ids/N, waiting out an earlier session that holds it."""
        path = self.zk.path(f"/brokers/ids/{self.broker.node_id}")
        data = json.dumps(broker_znode(self.broker)).encode()
        deadline = time.monotonic() + 2 * self.broker.config.zk_session_timeout_ms / 1000 + 2
        while True:
            try:
                await self.zk.call(self.zk.client.create, path, data, ephemeral=True, makepath=True)
                self.registered = True
                log.info("registered %s", path)
                return
            except NodeExistsError:
                stat = await self.zk.call(self.zk.client.exists, path)
                if stat is not None and stat.ephemeralOwner == self.zk.session_id:
                    self.registered = True
                    return
                if time.monotonic() > deadline:
                    raise NodeFatal(
                        f"{path} is held by another live ZooKeeper session: "
                        f"broker id {self.broker.node_id} is already in use"
                    ) from None
                await asyncio.sleep(0.1)

    async def _register_again(self) -> None:
        if self.registered:
            try:
                await self.register()
            except Exception as e:
                self.broker.fail(f"cannot register again in ZooKeeper: {e}")

    async def close(self) -> None:
        await self.zk.close()
