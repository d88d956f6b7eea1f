"""What a handler (and the subsystems handed a node) may use of the node it serves, per role.

A leaf: it imports only the kernel and other leaves, so the security, log and groups packages
can name the node they are given without importing ``node.py`` or the broker and controller
packages. The broker's and the controller's own objects are therefore typed by Protocols of
what is used of them (authorizer, forwarder, controller channel, propagator, the controller's
lifecycle, the metadata cache); the image (and ``require_active``'s answer) is the metadata
leaf's own ``MetadataImage``, the replica manager the data-plane leaf's ``ReplicaView``. The
groups' and transactions' services and the share sessions are slots their owning module fills and
reads (``service_for``, ``sessions``), typed there: to the view they are ``object``, so nothing
else uses them through the node. mypy checks this module (pyproject's
``[tool.mypy]``); ``tests/reference/test_roles.py`` checks that ``BrokerNode`` and
``ControllerNode`` have every member their view declares, and that a function typed with a view
uses no other.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeGuard

from conformance.client.wire import Response
from conformance.protocol import Codec
from reference_impl.config import NodeConfig
from reference_impl.data_plane import ReplicaView
from reference_impl.metadata.image import BrokerRegistration, MetadataImage
from reference_impl.metrics import BrokerMetrics, ControllerMetrics, NodeMetrics
from reference_impl.net.listener import RequestContext, Session

#: metadata records to commit, or a function of the current image that makes them (called under
#: the controller's write lock)
Records = list[dict[str, Any]] | Callable[[MetadataImage], list[dict[str, Any]]]


class Authorizer(Protocol):
    """``security_hooks.Authorizer``: the default one, or the ACL authorizer."""

    def authorize(self, session: Session, operation: str, resource: tuple[str, str]) -> bool: ...


class Forwarder(Protocol):
    """``broker.forwarding.Forwarder``: a mutation sent on to the active controller (KIP-590)."""

    async def forward(self, ctx: RequestContext, body: dict) -> dict: ...


class ControllerChannel(Protocol):
    """``broker.controller_channel.ControllerChannel``: requests to the active controller."""

    async def request(
        self,
        api_key: int,
        body: dict[str, Any],
        *,
        version: int | None = None,
        timeout: float = 30.0,
    ) -> Response: ...


class Propagator(Protocol):
    """``controller.propagation.Propagator``: pushes metadata to the brokers."""

    def endpoint_of(self, reg: BrokerRegistration) -> dict[str, Any]: ...


class ControllerLifecycle(Protocol):
    """``controller.lifecycle.Lifecycle``: broker registrations, heartbeats, fencing."""

    async def register(
        self,
        broker_id: int,
        cluster_id: str,
        incarnation_id: str,
        listeners: list[dict[str, Any]],
        rack: str | None,
        start_time_ms: int,
    ) -> int: ...

    async def heartbeat(
        self, broker_id: int, epoch: int, offset: int, want_fence: bool, want_shutdown: bool
    ) -> dict[str, Any]: ...

    async def controlled_shutdown(self, broker_id: int, epoch: int) -> list[tuple[str, int]]: ...

    async def unregister(self, broker_id: int) -> None: ...


class CachedEndpoint(Protocol):
    """One listener of a broker, as UpdateMetadata gave it (``broker.metadata_cache.Endpoint``)."""

    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def security_protocol(self) -> int: ...


class CachedBroker(Protocol):
    """A live broker, as UpdateMetadata gave it (``broker.metadata_cache.BrokerInfo``)."""

    @property
    def broker_id(self) -> int: ...
    @property
    def endpoints(self) -> Mapping[str, CachedEndpoint]: ...
    @property
    def rack(self) -> str | None: ...
    @property
    def start_time_ms(self) -> int: ...


class CachedPartition(Protocol):
    """A partition's leader and replicas (``broker.metadata_cache.PartitionInfo``)."""

    @property
    def leader(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def isr(self) -> tuple[int, ...]: ...
    @property
    def replicas(self) -> tuple[int, ...]: ...
    @property
    def offline_replicas(self) -> tuple[int, ...]: ...
    @property
    def partition_epoch(self) -> int: ...


class CachedTopic(Protocol):
    """A topic (``broker.metadata_cache.TopicInfo``)."""

    @property
    def name(self) -> str: ...
    @property
    def topic_id(self) -> uuid.UUID: ...
    @property
    def partitions(self) -> Mapping[int, CachedPartition]: ...


class MetadataCacheView(Protocol):
    """What handlers read of a broker's metadata cache (``broker.metadata_cache.MetadataCache``:
    the broker package, which this leaf may not import): read-only."""

    @property
    def cluster_id(self) -> str | None: ...
    @property
    def controller_id(self) -> int: ...
    @property
    def controller_epoch(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def brokers(self) -> Mapping[int, CachedBroker]: ...
    @property
    def topics(self) -> Mapping[str, CachedTopic]: ...
    @property
    def topic_ids(self) -> Mapping[uuid.UUID, str]: ...
    @property
    def topic_configs(self) -> dict[str, dict[str, str]]: ...
    @property
    def broker_configs(self) -> dict[str, dict[str, str]]: ...
    @property
    def group_configs(self) -> dict[str, dict[str, str]]: ...
    @property
    def quotas(self) -> list[tuple[tuple[tuple[str, str | None], ...], dict[str, float]]]: ...
    @property
    def acls(self) -> list[dict[str, Any]]: ...
    @property
    def scram(self) -> dict[str, dict[str, dict[str, Any]]]: ...

    def apply_update_metadata(self, body: dict[str, Any], version: int) -> None: ...
    def topic_config(self, name: str) -> dict[str, str]: ...
    def partition(self, topic: str, index: int) -> CachedPartition | None: ...
    def endpoint(self, broker_id: int, listener: str) -> CachedEndpoint | None: ...
    def alive(self, broker_id: int) -> bool: ...


class NodeView(Protocol):
    """Any node, broker or controller: its identity, settings, codec and authorizer."""

    role: str
    node_id: int
    config: NodeConfig
    codec: Codec
    metrics: NodeMetrics
    data_dir: Path
    cluster_id: str | None
    authorizer: Authorizer

    def authorize(self, session: Session, operation: str, resource: tuple[str, str]) -> bool: ...

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task: ...


class BrokerView(NodeView, Protocol):
    """A broker: what UpdateMetadata told it, its replicas and groups, its way to the
    controller."""

    metrics: BrokerMetrics
    metadata_cache: MetadataCacheView
    #: ``replica.manager.ReplicaManager``, as handlers and the coordinators' services use it
    replica_manager: ReplicaView
    forwarder: Forwarder
    controller_channel: ControllerChannel
    # (the broker's registration and heartbeats, ``broker.lifecycle.BrokerLifecycle``, are not
    # part of the view: no handler uses them; issue 35)
    broker_epoch: int
    # The next three are slots, each filled on first use and read only by its owner, which
    # types what it finds (tests put stand-ins there): their classes live in packages this leaf
    # may not import (security imports it and may not reach groups), and no one else may use
    # them through the view.
    #: the group coordinator's service (``groups.service.service_for``)
    groups: object
    #: the transaction coordinator's service (``txn.service.service_for``)
    transactions: object
    #: the share sessions and share-partition states, KIP-932 (``handlers.share_common.sessions``)
    share_sessions: object

    #: ``create_topic(name, partitions, replication_factor, configs=None)``: asks the
    #: controller (auto-creation, internal topics); Kafka's error code
    create_topic: Callable[..., Awaitable[int]]

    def metadata_applied(self) -> None: ...


class ControllerView(NodeView, Protocol):
    """The controller: the metadata image it writes, whether it is the active one."""

    metrics: ControllerMetrics
    #: the image once loaded (None before)
    image: MetadataImage | None
    active: bool
    propagator: Propagator
    lifecycle: ControllerLifecycle

    def require_active(self) -> MetadataImage: ...

    async def commit(self, records: Records, *, rebalance: bool = False) -> int: ...

    async def wait_propagated(self, offset: int, timeout_ms: int) -> bool: ...


def is_broker(node: NodeView) -> TypeGuard[BrokerView]:
    """``node`` serves as a broker (its ``role``): what a handler checks before broker members."""
    return node.role == "broker"


def is_controller(node: NodeView) -> TypeGuard[ControllerView]:
    """``node`` serves as the controller (its ``role``)."""
    return node.role == "controller"


def either_role(node: NodeView) -> BrokerView | ControllerView:
    """``node`` as the view of its role, for code that serves both."""
    if is_broker(node):
        return node
    assert is_controller(node), node.role
    return node
