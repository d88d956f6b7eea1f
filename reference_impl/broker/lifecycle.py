"""The broker's side of the registration draft: register, heartbeat, fence, stop.

After local start-up the broker sends BrokerRegistration (with its KIP-536 start time) and is
Fenced. It heartbeats every ``heartbeat_interval_ms`` with the metadata offset it has applied,
and at once when that offset reaches its registration; the controller's answer unfences it
(Online). Without an answer for the session timeout it counts itself Fenced again. A stale
epoch or an unknown registration makes it register anew. On SIGINT/SIGTERM it is Stopping: its
heartbeats say WantShutDown until the controller answers ShouldShutDown (or the controlled
shutdown times out, or no controller answers for the session timeout); then the process
stops (Offline).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any, Protocol

from conformance.protocol import ApiKey, ErrorCode
from reference_impl import extensions
from reference_impl.broker_state import BrokerState
from reference_impl.net.listener import Listener
from reference_impl.process import NodeFatal
from reference_impl.roles import BrokerView

log = logging.getLogger(__name__)


class LifecycleHost(BrokerView, Protocol):
    """What the lifecycle uses of its broker (``broker.LifecycleHost``) beyond what handlers may:
    its state, incarnation, listeners and the channel its registration goes through."""

    state: BrokerState
    incarnation_id: uuid.UUID
    #: registration and heartbeats (``controller_channel.ControllerChannel``)
    lifecycle_channel: Any
    listeners: list[Listener]
    serving: asyncio.Event
    start_time_ms: int


SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class BrokerLifecycle:
    def __init__(self, broker: LifecycleHost) -> None:
        self.b = broker
        self.nudge = asyncio.Event()
        self.want_shutdown = False
        self.shut_down_ok = asyncio.Event()
        self.last_answer = time.monotonic()

    @property
    def interval(self) -> float:
        return self.b.config.heartbeat_interval_ms / 1000

    def set_state(self, state: BrokerState) -> None:
        if state != self.b.state:
            log.info("broker state %s -> %s", self.b.state.value, state.value)
        self.b.state = state
        self.b.metrics.state.state(state.value.lower())
        if state == BrokerState.ONLINE and not self.b.serving.is_set():
            self.b.serving.set()

    def registration_body(self) -> dict[str, Any]:
        config = self.b.config
        body = {
            "BrokerId": self.b.node_id,
            "ClusterId": self.b.cluster_id,
            "IncarnationId": self.b.incarnation_id,
            "Listeners": [
                {
                    "Name": lst.name,
                    "Host": lst.host,
                    "Port": listener.port,
                    "SecurityProtocol": SECURITY_PROTOCOLS.get(lst.security_protocol, 0),
                }
                for lst, listener in zip(config.listeners, self.b.listeners, strict=True)
            ],
            "Features": [],
            "Rack": config.rack,
            "LogDirs": [],
        }
        return extensions.put_int64(body, extensions.START_TIME_TAG, self.b.start_time_ms)

    async def register(self) -> None:
        channel = self.b.lifecycle_channel
        backoff = 0.05
        while True:
            try:
                resp = await channel.request(
                    ApiKey.BROKER_REGISTRATION, self.registration_body(), timeout=self._timeout()
                )
            except TimeoutError:
                log.warning("controller unreachable for registration; retrying")
                continue
            code = resp.body["ErrorCode"]
            if code == ErrorCode.NONE:
                self.b.broker_epoch = resp.body["BrokerEpoch"]
                self.b.metrics.broker_epoch.set(self.b.broker_epoch)
                self.last_answer = time.monotonic()
                if self.b.state != BrokerState.STOPPING:
                    self.set_state(BrokerState.FENCED)
                log.info("registered with epoch %d", self.b.broker_epoch)
                return
            if code == ErrorCode.INCONSISTENT_CLUSTER_ID:
                raise NodeFatal(
                    f"INCONSISTENT_CLUSTER_ID: the controller refused this broker's cluster id "
                    f"{self.b.cluster_id}: it belongs to another cluster"
                )
            if code == ErrorCode.DUPLICATE_BROKER_REGISTRATION:
                log.info("an earlier incarnation is still registered; waiting for its session")
            else:
                log.warning("registration refused: error %d", code)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.interval)

    def _timeout(self) -> float:
        return max(self.b.config.session_timeout_ms / 1000, 1.0)

    async def run(self) -> None:
        await self.register()
        while True:
            try:
                async with asyncio.timeout(self.interval):
                    await self.nudge.wait()
            except TimeoutError:
                pass
            self.nudge.clear()
            if await self.heartbeat():
                return

    async def heartbeat(self) -> bool:
        """One heartbeat; True when the controller says this broker may shut down."""
        body = {
            "BrokerId": self.b.node_id,
            "BrokerEpoch": self.b.broker_epoch,
            "CurrentMetadataOffset": self.b.metadata_cache.offset,
            "WantFence": False,
            "WantShutDown": self.want_shutdown,
        }
        try:
            resp = await self.b.lifecycle_channel.request(
                ApiKey.BROKER_HEARTBEAT, body, timeout=self.interval * 2
            )
        except TimeoutError:
            if time.monotonic() - self.last_answer > self._timeout():
                if self.want_shutdown:
                    log.warning("no controller to move leaderships away: stopping anyway")
                    return True
                if self.b.state == BrokerState.ONLINE:
                    log.warning("no heartbeat answer for the session timeout: Fenced")
                    self.set_state(BrokerState.FENCED)
            return False
        self.last_answer = time.monotonic()
        code = resp.body["ErrorCode"]
        if code in (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED):
            log.warning("heartbeat refused (error %d): registering again", code)
            await self.register()
            return False
        if code != ErrorCode.NONE:
            log.warning("heartbeat error %d", code)
            return False
        if resp.body["ShouldShutDown"]:
            return True
        if not self.want_shutdown:
            self.set_state(BrokerState.FENCED if resp.body["IsFenced"] else BrokerState.ONLINE)
        return False

    def metadata_applied(self) -> None:
        """A fenced broker that has caught up heartbeats at once instead of waiting."""
        if (
            self.b.state == BrokerState.FENCED
            and self.b.metadata_cache.offset >= self.b.broker_epoch
        ):
            self.nudge.set()

    async def stop(self, task: asyncio.Task | None) -> None:
        """Stopping: WantShutDown until ShouldShutDown, bounded by the shutdown timeout."""
        if task is None or task.done() or self.b.broker_epoch < 0:
            return
        self.want_shutdown = True
        self.set_state(BrokerState.STOPPING)
        self.nudge.set()
        timeout = self.b.config.controlled_shutdown_timeout_ms / 1000
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(task)
            log.info("controller answered ShouldShutDown")
        except TimeoutError:
            log.warning("controlled shutdown timed out after %.1f s; stopping anyway", timeout)
