"""What a handler (and the subsystems handed a node) may use of the node it serves, per role.

A leaf: it imports only the kernel and other leaves, so the security, log and groups packages
can name the node they are given without importing ``node.py`` or the broker and controller
packages. The broker's and the controller's own objects (metadata cache, replica manager,
lifecycle, image …) are typed ``Any`` here for that reason; what matters is which names a role
offers. ``tests/reference/test_roles.py`` checks that ``BrokerNode`` and ``ControllerNode``
have every member their view declares, and that a function typed with a view uses no other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, Protocol

from conformance.protocol import Codec
from reference_impl.config import NodeConfig
from reference_impl.metrics import NodeMetrics
from reference_impl.net.listener import Session


class NodeView(Protocol):
    """Any node, broker or controller: its identity, settings, codec and authorizer."""

    role: str
    node_id: int
    config: NodeConfig
    codec: Codec
    metrics: NodeMetrics
    data_dir: Path
    cluster_id: str | None
    #: the node's authorizer (``security_hooks.Authorizer``; ACLs or the default one)
    authorizer: Any

    def authorize(self, session: Session, operation: str, resource: tuple[str, str]) -> bool: ...

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task: ...


class BrokerView(NodeView, Protocol):
    """A broker: what UpdateMetadata told it, its replicas and groups, its way to the
    controller."""

    #: ``broker.metadata_cache.MetadataCache``
    metadata_cache: Any
    #: ``replica.api.ReplicaManager``
    replica_manager: Any
    #: ``broker.forwarding.Forwarder`` (``forward(ctx, body)``)
    forwarder: Any
    #: requests to the active controller (``broker.controller_channel.ControllerChannel``)
    controller_channel: Any
    #: the broker's registration and heartbeats (``broker.lifecycle.BrokerLifecycle``)
    lifecycle: Any
    broker_epoch: int
    #: the group coordinator's service, attached by ``groups.service.service_for`` on first use
    groups: Any
    #: the transaction coordinator's service, attached by ``txn.service.service_for`` on first use
    transactions: Any

    #: ``create_topic(name, partitions, replication_factor, configs=None)``: asks the
    #: controller (auto-creation, internal topics); Kafka's error code
    create_topic: Callable[..., Awaitable[int]]

    def metadata_applied(self) -> None: ...


class ControllerView(NodeView, Protocol):
    """The controller: the metadata image it writes, whether it is the active one."""

    #: ``metadata.image.MetadataImage`` once loaded
    image: Any
    active: bool
    #: pushes metadata to the brokers (``controller.propagation.Propagator``)
    propagator: Any
    #: broker registrations, heartbeats, fencing (``controller.lifecycle.Lifecycle``)
    lifecycle: Any

    def require_active(self) -> Any: ...

    async def commit(self, records: list[dict[str, Any]], *, rebalance: bool = False) -> int: ...

    async def wait_propagated(self, offset: int, timeout_ms: int) -> bool: ...
