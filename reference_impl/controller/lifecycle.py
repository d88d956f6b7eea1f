"""Broker lifecycle on the controller (registration draft, realised with KIP-631's RPCs).

- BrokerRegistration: the broker is Fenced, with a new epoch (the offset of its registration
  record, so epochs only grow). A different incarnation of an unfenced (Online or Stopping)
  broker id whose session is still alive is refused (DUPLICATE_BROKER_REGISTRATION); a Fenced
  one has no session to keep, as in Apache Kafka's controller, and is registered anew; a
  registration naming another cluster id is refused (INCONSISTENT_CLUSTER_ID).
- BrokerHeartbeat: keeps the session; a Fenced broker whose CurrentMetadataOffset has reached
  its registration is caught up and becomes Online; WantFence fences an Online broker;
  WantShutDown makes it Stopping, its leaderships move to other Online ISR members, and once the
  Online brokers have acknowledged that move the answer is ShouldShutDown and the broker is
  Offline; an Online broker that leads nothing is Offline at once (as in Kafka's controller).
- A broker whose heartbeats stop for the session timeout is Fenced (and loses leaderships). A
  heartbeat counts from its arrival, before it waits for the lifecycle lock (as Kafka's
  controller tracks contact times before its event queue), and a session does not run while
  this controller's own loop is stalled (see ``_forgive``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from conformance.protocol import ErrorCode, KafkaError
from reference_impl.broker_state import BrokerState
from reference_impl.metadata.image import BrokerRegistration, MetadataImage
from reference_impl.metadata.placement import led_by
from reference_impl.roles import ControllerView

log = logging.getLogger(__name__)


def state_record(broker_id: int, state: BrokerState) -> dict[str, Any]:
    return {"type": "broker_state", "broker_id": broker_id, "state": state.value}


class Lifecycle:
    def __init__(self, controller: ControllerView) -> None:
        self.c = controller
        self.last_heartbeat: dict[int, float] = {}
        #: brokers that registered or heartbeated with this controller since it became active:
        #: only their sessions can make another incarnation a duplicate
        self.contacted: set[int] = set()
        self.stopping: dict[int, tuple[int, float]] = {}
        self._lock: asyncio.Lock | None = None
        self._sweeper: asyncio.Task | None = None

    @property
    def session_timeout(self) -> float:
        return self.c.config.session_timeout_ms / 1000

    def lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def activated(self) -> None:
        image = self.c.image
        assert image is not None
        now = time.monotonic()
        # A broker that was Online or Stopping gets a session's grace to heartbeat before it is
        # fenced (we cannot know when it last heartbeated); a Fenced or Offline one gets none.
        # Until a broker contacts this controller its registration blocks no new incarnation
        # (Kafka counts a session from heartbeats only): brokers restarted after a crash, or
        # together with the controller, register at once instead of a session later.
        self.last_heartbeat = {b: now for b, reg in image.brokers.items() if reg.state.visible}
        self.contacted = set()
        self.stopping.clear()
        for b, reg in image.brokers.items():
            self.c.metrics.set_broker_state(b, reg.state.value.lower())
        self._sweeper = self.c.spawn(self._sweep(), "session-sweeper")

    def deactivated(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None

    def committed(self, records: list[dict[str, Any]]) -> None:
        image = self.c.image
        assert image is not None
        for r in records:
            if r["type"] in ("register_broker", "broker_state", "unregister_broker"):
                reg = image.brokers.get(r["broker_id"])
                self.c.metrics.set_broker_state(
                    r["broker_id"], reg.state.value.lower() if reg is not None else None
                )

    def alive(self, broker_id: int) -> bool:
        seen = self.last_heartbeat.get(broker_id)
        return seen is not None and time.monotonic() - seen <= self.session_timeout

    # --- RPCs --------------------------------------------------------------------------

    async def register(
        self,
        broker_id: int,
        cluster_id: str,
        incarnation_id: str,
        listeners: list[dict[str, Any]],
        rack: str | None,
        start_time_ms: int,
    ) -> int:
        async with self.lock():
            image = self.c.require_active()
            if cluster_id != image.cluster_id:
                raise KafkaError(
                    ErrorCode.INCONSISTENT_CLUSTER_ID,
                    f"cluster id {cluster_id} is not this cluster's ({image.cluster_id})",
                )
            if broker_id < 0 or not listeners:
                raise KafkaError(ErrorCode.INVALID_REGISTRATION, "a broker id >= 0 and listeners")
            old = image.brokers.get(broker_id)
            if (
                old is not None
                and old.incarnation_id != incarnation_id
                and old.state in (BrokerState.ONLINE, BrokerState.STOPPING)
                and broker_id in self.contacted
                and self.alive(broker_id)
            ):
                raise KafkaError(
                    ErrorCode.DUPLICATE_BROKER_REGISTRATION,
                    f"broker {broker_id} is registered by another live incarnation",
                )
            epoch = -1

            def records(image: MetadataImage) -> list[dict[str, Any]]:
                nonlocal epoch
                epoch = image.offset + 1
                reg = BrokerRegistration(
                    broker_id, epoch, incarnation_id, listeners, rack, start_time_ms
                )
                return [reg.record()]

            await self.c.commit(records, rebalance=old is not None and old.state.visible)
            self.last_heartbeat[broker_id] = time.monotonic()
            self.contacted.add(broker_id)
            self.stopping.pop(broker_id, None)
            self.c.propagator.registered(broker_id)
            log.info("broker %d registered, epoch %d (Fenced)", broker_id, epoch)
            return epoch

    async def heartbeat(
        self, broker_id: int, epoch: int, offset: int, want_fence: bool, want_shutdown: bool
    ) -> dict[str, Any]:
        self._contact(broker_id, epoch)
        async with self.lock():
            image = self.c.require_active()
            reg = image.brokers.get(broker_id)
            if reg is None:  # as Kafka's controller: the epoch matches no registration
                raise KafkaError(ErrorCode.STALE_BROKER_EPOCH, f"broker {broker_id} unregistered")
            if epoch != reg.epoch:
                raise KafkaError(
                    ErrorCode.STALE_BROKER_EPOCH, f"epoch {epoch}, registered epoch {reg.epoch}"
                )
            self.last_heartbeat[broker_id] = time.monotonic()
            self.contacted.add(broker_id)
            caught_up = offset >= reg.epoch
            state = reg.state
            should_shut_down = False
            if state == BrokerState.OFFLINE:
                should_shut_down = True
            elif want_shutdown:
                should_shut_down = await self._shutdown_step(broker_id, state)
            elif want_fence:
                if state == BrokerState.ONLINE:
                    await self._set_state(broker_id, BrokerState.FENCED)
            elif state == BrokerState.FENCED and caught_up:
                await self._set_state(broker_id, BrokerState.ONLINE)
            image = self.c.require_active()
            now = image.brokers[broker_id].state
            return {
                "IsCaughtUp": caught_up,
                "IsFenced": not now.visible,
                "ShouldShutDown": should_shut_down,
            }

    async def _set_state(self, broker_id: int, state: BrokerState) -> int:
        offset = await self.c.commit([state_record(broker_id, state)], rebalance=True)
        log.info("broker %d: %s", broker_id, state.value)
        return offset

    async def _shutdown_step(self, broker_id: int, state: BrokerState) -> bool:
        """One heartbeat's worth of controlled shutdown; True when the broker may stop."""
        if state == BrokerState.FENCED:
            await self._set_state(broker_id, BrokerState.OFFLINE)
            return True
        if state != BrokerState.STOPPING and not led_by(self.c.require_active(), broker_id):
            # nothing to move: as Kafka's controller, shut down now (fenced, ShouldShutDown)
            await self._set_state(broker_id, BrokerState.OFFLINE)
            return True
        if state != BrokerState.STOPPING:
            offset = await self._set_state(broker_id, BrokerState.STOPPING)
            self.stopping[broker_id] = (offset, time.monotonic())
        offset, since = self.stopping.setdefault(broker_id, (-1, time.monotonic()))
        moved = self.c.propagator.caught_up(offset)
        if moved or time.monotonic() - since > self.session_timeout:
            await self._set_state(broker_id, BrokerState.OFFLINE)
            self.stopping.pop(broker_id, None)
            return True
        return False

    async def controlled_shutdown(self, broker_id: int, epoch: int) -> list[tuple[str, int]]:
        """ControlledShutdown (7): Stopping, leaderships moved; the partitions it still leads."""
        async with self.lock():
            image = self.c.require_active()
            reg = image.brokers.get(broker_id)
            if reg is None:
                raise KafkaError(ErrorCode.BROKER_ID_NOT_REGISTERED, f"broker {broker_id}")
            if epoch not in (-1, reg.epoch):
                raise KafkaError(ErrorCode.STALE_BROKER_EPOCH)
            if reg.state in (BrokerState.ONLINE, BrokerState.FENCED):
                offset = await self._set_state(broker_id, BrokerState.STOPPING)
                self.stopping[broker_id] = (offset, time.monotonic())
            image = self.c.require_active()
            return led_by(image, broker_id)

    async def unregister(self, broker_id: int) -> None:
        async with self.lock():
            image = self.c.require_active()
            if broker_id not in image.brokers:
                raise KafkaError(ErrorCode.BROKER_ID_NOT_REGISTERED, f"broker {broker_id}")
            await self.c.commit(
                [{"type": "unregister_broker", "broker_id": broker_id}], rebalance=True
            )
            self.last_heartbeat.pop(broker_id, None)
            self.stopping.pop(broker_id, None)
            log.info("broker %d unregistered", broker_id)

    # --- sessions ----------------------------------------------------------------------

    def _contact(self, broker_id: int, epoch: int) -> None:
        """A heartbeat of the registered epoch keeps the session from its arrival, not from
        when the lock is free: a commit under way (or a queue of heartbeats) must not make a
        live broker miss its session. Kafka 4.x's controller alike records contact times as
        requests arrive (``BrokerHeartbeatTracker.updateContactTime`` from
        ``QuorumController.processBrokerHeartbeat``, before the write event is queued)."""
        image = self.c.image
        reg = image.brokers.get(broker_id) if image is not None else None
        if reg is not None and reg.epoch == epoch:
            self.last_heartbeat[broker_id] = time.monotonic()

    def _forgive(self, stall: float) -> None:
        """Extend every session by ``stall``, the time this controller's loop did not run.

        A sweep that wakes late means the whole process was descheduled (a loaded machine) or
        its loop was blocked: heartbeats that arrived meanwhile wait unread in its sockets, and
        are read only after this sweep. Counting that time against the brokers would fence live
        ones for the controller's own lag; a broker that really stopped is still fenced after
        one session of time in which this controller could have heard it."""
        if stall <= 0:
            return
        if stall >= self.session_timeout / 4:
            log.info("this controller did not run for %.2f s: broker sessions extended", stall)
        now = time.monotonic()
        for b, seen in self.last_heartbeat.items():
            self.last_heartbeat[b] = min(seen + stall, now)

    async def _sweep(self) -> None:
        interval = min(max(self.session_timeout / 10, 0.02), 0.25)
        while True:
            asleep = time.monotonic()
            await asyncio.sleep(interval)
            self._forgive(time.monotonic() - asleep - interval)
            image = self.c.image
            if image is None:
                continue
            expired = [
                b
                for b, reg in image.brokers.items()
                if reg.state in (BrokerState.ONLINE, BrokerState.STOPPING) and not self.alive(b)
            ]
            for broker_id in expired:
                async with self.lock():
                    image = self.c.image
                    reg = image.brokers.get(broker_id) if image is not None else None
                    if reg is None or not reg.state.visible or self.alive(broker_id):
                        continue
                    log.warning("broker %d missed heartbeats for the session timeout", broker_id)
                    try:
                        await self._set_state(broker_id, BrokerState.FENCED)
                    except KafkaError:
                        return
