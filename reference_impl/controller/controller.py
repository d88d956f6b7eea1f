"""The controller process: the only writer of cluster metadata.

Start-up: lock the data dir, open the metadata store, get-or-generate the KIP-78 cluster id
(and check it against this node's ``meta.properties``), open the controller listener, then
campaign: in embedded mode this controller is active at once; in ZooKeeper mode it waits until
it wins ``/controller``. While active it holds the image, commits record batches through the
store (``commit``), tracks broker lifecycles and propagates every change to the brokers. A
controller that loses ZooKeeper leadership answers NOT_CONTROLLER until it wins again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from conformance.protocol import ErrorCode, KafkaError
from reference_impl import cluster_id as kip78
from reference_impl.config import NodeConfig
from reference_impl.controller.lifecycle import Lifecycle
from reference_impl.controller.propagation import Propagator
from reference_impl.controller.store import EmbeddedStore, MetadataStore, StoreFenced
from reference_impl.metadata.image import MetadataImage
from reference_impl.metadata.placement import reconcile
from reference_impl.metrics import ControllerMetrics
from reference_impl.node import Node
from reference_impl.process import NodeFatal

log = logging.getLogger(__name__)

Records = list[dict[str, Any]] | Callable[[MetadataImage], list[dict[str, Any]]]


def open_store(config: NodeConfig) -> MetadataStore:
    """The metadata store the config names: ZooKeeper's (kazoo loaded only then) or the
    embedded log. Here rather than in ``store.py``, which ``zookeeper_store`` builds on."""
    if config.zookeeper is not None:
        from reference_impl.controller.zookeeper_store import ZooKeeperStore

        return ZooKeeperStore(config)
    return EmbeddedStore(config)


class ControllerNode(Node):
    role = "controller"
    listener_type = "controller"
    metrics: ControllerMetrics

    def __init__(self, config: NodeConfig) -> None:
        super().__init__(config, ControllerMetrics(config.node_id))
        self.store = open_store(config)
        self.image: MetadataImage | None = None
        self.active = False
        self.propagator = Propagator(self)
        self.lifecycle = Lifecycle(self)
        self._write_lock: asyncio.Lock | None = None
        self._resigned: asyncio.Event | None = None
        #: a test-only fault (``metadata/placement.reconcile``); off unless a project test sets
        #: ``settings["faults"]["unclean_leader_election"]``
        faults = (config.settings or {}).get("faults") or {}
        self.unclean_election = bool(faults.get("unclean_leader_election", False))

    # --- start and stop ----------------------------------------------------------------

    async def start(self) -> None:
        self._write_lock = asyncio.Lock()
        self._resigned = asyncio.Event()
        self.lock_data_dir()
        self.start_metrics()
        self.store.on_resign = self.resign
        await self.store.open()
        cluster_id = await self.store.cluster_id()
        try:
            kip78.check_and_store(self.data_dir, cluster_id, self.node_id)
        except (kip78.InconsistentClusterId, ValueError) as e:
            raise NodeFatal(str(e)) from None
        self.set_cluster_id(cluster_id)
        self.build_listeners()
        await self.start_listeners()
        self.write_runtime_info()
        self.spawn(self._campaign(), "campaign")

    async def _campaign(self) -> None:
        assert self._resigned is not None
        while True:
            epoch = await self.store.become_active()
            image = await self.store.load()
            if image.cluster_id not in (None, self.cluster_id):
                raise NodeFatal(f"metadata store holds cluster id {image.cluster_id}")
            image.cluster_id = self.cluster_id
            image.controller_epoch = epoch
            self._resigned.clear()
            self.image = image
            self.active = True
            self.metrics.active.set(1)
            self.metrics.epoch.set(epoch)
            self.metrics.metadata_offset.set(image.offset)
            log.info("active controller, epoch %d, metadata offset %d", epoch, image.offset)
            self.lifecycle.activated()
            self.propagator.changed()
            await self._resigned.wait()
            log.warning("no longer the active controller")

    def resign(self) -> None:
        """Leadership lost (ZooKeeper session, or a newer controller fenced our write)."""
        if not self.active:
            return
        self.active = False
        self.metrics.active.set(0)
        self.propagator.stop()
        self.lifecycle.deactivated()
        self.image = None
        if self._resigned is not None:
            self._resigned.set()

    async def close(self) -> None:
        self.propagator.stop()
        await super().close()
        await self.store.close()

    # --- writing -------------------------------------------------------------------------

    def require_active(self) -> MetadataImage:
        if not self.active or self.image is None:
            raise KafkaError(ErrorCode.NOT_CONTROLLER, "this controller is not active")
        return self.image

    async def commit(self, records: Records, *, rebalance: bool = False) -> int:
        """Persist and apply a batch; with ``rebalance``, leaders and ISRs follow broker states.

        ``records`` may be a function of the current image, called under the write lock (for
        records that name their own offset, such as a registration's broker epoch). Returns
        the offset of the batch's last record. Raises NOT_CONTROLLER when this controller is
        not (or no longer) the active one.
        """
        assert self._write_lock is not None
        async with self._write_lock:
            image = self.require_active()
            if callable(records):
                records = records(image)
            after = image.copy()
            for record in records:
                after.apply(record, after.offset + 1)
            if rebalance:
                extra = reconcile(after, unclean=self.unclean_election)
                for record in extra:
                    after.apply(record, after.offset + 1)
                records = [*records, *extra]
            if not records:
                return image.offset
            try:
                await self.store.append(records, after)
            except StoreFenced as e:
                log.warning("write refused by the store: %s", e)
                self.resign()
                raise KafkaError(
                    ErrorCode.NOT_CONTROLLER, "no longer the active controller"
                ) from None
            if not self.active:
                raise KafkaError(ErrorCode.NOT_CONTROLLER, "no longer the active controller")
            self.image = after
            self.metrics.metadata_offset.set(after.offset)
            self.lifecycle.committed(records)
            self.propagator.changed()
            return after.offset

    async def wait_propagated(self, offset: int, timeout_ms: int) -> bool:
        """Wait (up to ``timeout_ms``) until every Online broker has acknowledged ``offset``."""
        if timeout_ms <= 0:
            return self.propagator.caught_up(offset)
        return await self.propagator.wait_acked(offset, timeout_ms / 1000)


def main() -> int:
    from reference_impl.node import main as run_node

    return run_node(ControllerNode)
