"""The broker process: serves clients, stores partitions, follows the controller.

Start-up (the draft's Offline state): lock the data dir; in ZooKeeper mode get-or-create the
KIP-78 cluster id in ``/cluster/id``; the data plane's local start-up (log recovery); open the
client listener (the controller's UpdateMetadata / LeaderAndIsr / StopReplica are served at
once; client requests wait until the broker is first unfenced, since a Fenced broker does not
answer clients); in ZooKeeper mode register the ephemeral ``/brokers/ids/N`` (``timestamp`` =
KIP-536 start time); in embedded mode learn the cluster id from the controller; check it
against ``meta.properties``; then register with the controller and heartbeat (``lifecycle``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from reference_impl import cluster_id as kip78
from reference_impl.broker.controller_channel import ControllerChannel
from reference_impl.broker.forwarding import Forwarder
from reference_impl.broker.lifecycle import BrokerLifecycle
from reference_impl.broker.metadata_cache import MetadataCache
from reference_impl.broker_state import BrokerState
from reference_impl.config import NodeConfig
from reference_impl.metrics import BrokerMetrics
from reference_impl.net.listener import Api, RequestContext
from reference_impl.node import Node
from reference_impl.process import NodeFatal
from reference_impl.replica import api as replica_api

log = logging.getLogger(__name__)

#: served before the broker is unfenced: what the controller sends, and ApiVersions / SASL
UNGATED = frozenset({4, 5, 6, 17, 18, 36})


class BrokerNode(Node):
    role = "broker"
    listener_type = "zkBroker"
    metrics: BrokerMetrics
    #: the group coordinator's service, attached by ``groups.service.service_for`` on first use
    groups: Any = None
    #: the transaction coordinator's service, attached by ``txn.service.service_for``
    transactions: Any = None
    #: share sessions and share-partition states, attached by ``handlers.share_common.sessions``
    share_sessions: Any = None

    def __init__(self, config: NodeConfig) -> None:
        super().__init__(config, BrokerMetrics(config.node_id))
        if not config.controllers:
            raise NodeFatal("a broker needs the controllers' addresses (controllers)")
        self.state = BrokerState.OFFLINE
        self.broker_epoch = -1
        self.incarnation_id = uuid.uuid4()
        self.metadata_cache = MetadataCache()
        self.zk = None
        discover = self._discover_controller if config.zookeeper else None
        name = f"broker-{config.node_id}"
        attempt = max(config.session_timeout_ms / 1000, 1.0)
        self.controller_channel = ControllerChannel(
            self.codec, config.controllers, name, discover, attempt
        )
        self.lifecycle_channel = ControllerChannel(
            self.codec, config.controllers, name, discover, attempt
        )
        self.lifecycle_channel.on_connected = self.controller_channel.follow
        self.forwarder = Forwarder(self)
        self.lifecycle = BrokerLifecycle(self)
        self.replica_manager = replica_api.create(self)
        self.serving: asyncio.Event = asyncio.Event()
        self._lifecycle_task: asyncio.Task | None = None

    async def _discover_controller(self) -> int | None:
        return await self.zk.active_controller() if self.zk is not None else None

    # --- start and stop ----------------------------------------------------------------

    async def start(self) -> None:
        self.serving = asyncio.Event()
        self.lock_data_dir()
        self.start_metrics()
        if self.config.zookeeper:
            from reference_impl.broker.zookeeper import BrokerZooKeeper

            self.zk = BrokerZooKeeper(self)
            await self.zk.start()
            self._adopt_cluster_id(await self.zk.cluster_id())
        await self.replica_manager.startup()
        self.build_listeners()
        await self.start_listeners()
        self.write_runtime_info()
        if self.zk is not None:
            await self.zk.register()
        else:
            self._adopt_cluster_id(await self._cluster_id_from_controller())
        self.write_runtime_info()
        self._lifecycle_task = self.spawn(self.lifecycle.run(), "lifecycle")

    def _adopt_cluster_id(self, cluster_id: str) -> None:
        try:
            kip78.check_and_store(self.data_dir, cluster_id, self.node_id)
        except (kip78.InconsistentClusterId, ValueError) as e:
            raise NodeFatal(str(e)) from None
        self.set_cluster_id(cluster_id)
        self.metadata_cache.cluster_id = cluster_id

    async def _cluster_id_from_controller(self) -> str:
        while True:
            try:
                resp = await self.lifecycle_channel.request(
                    ApiKey.DESCRIBE_CLUSTER,
                    {"IncludeClusterAuthorizedOperations": False},
                    timeout=5,
                )
            except TimeoutError:
                log.warning("controller unreachable; waiting to learn the cluster id")
                continue
            if resp.body["ErrorCode"] == ErrorCode.NONE and resp.body["ClusterId"]:
                return resp.body["ClusterId"]
            await asyncio.sleep(0.1)

    async def shutdown(self) -> None:
        await self.lifecycle.stop(self._lifecycle_task)

    async def close(self) -> None:
        await super().close()
        await self.replica_manager.shutdown()
        await self.controller_channel.close()
        await self.lifecycle_channel.close()
        if self.zk is not None:
            await self.zk.close()
        self.lifecycle.set_state(BrokerState.OFFLINE)

    # --- serving -----------------------------------------------------------------------

    def wrap_handler(self, api: Api) -> Callable:
        if api.key in UNGATED:
            return api.handler
        inner = api.handler

        async def gated(ctx: RequestContext, body: dict) -> dict | None:
            if not self.serving.is_set():
                await self.serving.wait()
            return await inner(ctx, body)

        return gated

    def metadata_applied(self) -> None:
        self.metrics.metadata_offset.set(self.metadata_cache.offset)
        self.lifecycle.metadata_applied()

    async def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        configs: dict[str, str] | None = None,
    ) -> int:
        """Ask the controller to create a topic (auto-creation, internal topics); error code."""
        body = {
            "Topics": [
                {
                    "Name": name,
                    "NumPartitions": partitions,
                    "ReplicationFactor": replication_factor,
                    "Assignments": [],
                    "Configs": [{"Name": k, "Value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeoutMs": 0,
        }
        try:
            resp = await self.controller_channel.request(
                ApiKey.CREATE_TOPICS, body, timeout=self.config.request_timeout_ms / 1000
            )
        except TimeoutError:
            return int(ErrorCode.REQUEST_TIMED_OUT)
        return resp.body["Topics"][0]["ErrorCode"]


def main() -> int:
    from reference_impl.node import main as run_node

    return run_node(BrokerNode)
