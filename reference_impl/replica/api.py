"""The interface between the broker's control side and the data plane (see the README).

The broker (``reference_impl/broker/``) owns the metadata cache and the controller channel; the
data plane implements ``ReplicaManager`` and is created by ``create(node)`` in
``reference_impl/replica/manager.py``. The broker calls it in this order:

1. ``await startup()`` — local start-up (log recovery) before the broker registers;
2. ``await apply_leader_and_isr(states)`` for every LeaderAndIsr, ``await stop_replicas(stops)``
   for every StopReplica; each returns an error code per partition (only non-zero ones);
3. ``await shutdown()`` when the process stops (after the controlled shutdown).

The states and results passed across, and ``ReplicaView`` (what handlers and the coordinators'
services call on the manager), are in the leaf ``reference_impl/data_plane.py``, which the
groups and security packages may import where they may not import this package.

What the data plane may use of the broker ``node``: ``node_id``, ``config``, ``codec``,
``data_dir``, ``broker_epoch``, ``metadata_cache`` (``broker/metadata_cache.py``: partitions,
leaders' endpoints, topic configs; ``add_listener`` for updates), ``controller_channel``
(``await request(api_key, body, timeout=…)``: AlterPartition with rediscovery),
``metrics.registry``, ``spawn(coro, name)`` for background tasks, and
``create_topic(name, partitions, replication_factor, configs)`` for internal topics such as
``__consumer_offsets`` (sent to the controller like Kafka's auto topic creation).
"""

from __future__ import annotations

import importlib
from typing import Protocol

from reference_impl.data_plane import PartitionState, StopReplicaState, TopicPartition
from reference_impl.roles import BrokerView


class ReplicaManager(Protocol):
    async def startup(self) -> None: ...

    async def apply_leader_and_isr(
        self, states: list[PartitionState]
    ) -> dict[TopicPartition, int]: ...

    async def stop_replicas(self, stops: list[StopReplicaState]) -> dict[TopicPartition, int]: ...

    async def shutdown(self) -> None: ...


class NullReplicaManager:
    """Holds no data: remembers what it was told (used until the data plane is present)."""

    def __init__(self) -> None:
        self.partitions: dict[TopicPartition, PartitionState] = {}

    async def startup(self) -> None:
        return None

    async def apply_leader_and_isr(self, states: list[PartitionState]) -> dict[TopicPartition, int]:
        for s in states:
            self.partitions[(s.topic, s.partition)] = s
        return {}

    async def stop_replicas(self, stops: list[StopReplicaState]) -> dict[TopicPartition, int]:
        for s in stops:
            self.partitions.pop((s.topic, s.partition), None)
        return {}

    async def shutdown(self) -> None:
        return None


MANAGER_MODULE = "reference_impl.replica.manager"


def create(node: BrokerView) -> ReplicaManager:
    """The data plane's ReplicaManager for ``node``, or a NullReplicaManager without one."""
    try:
        module = importlib.import_module(MANAGER_MODULE)
    except ModuleNotFoundError as e:
        if e.name != MANAGER_MODULE:
            raise
        return NullReplicaManager()
    return module.create(node)
