"""What the handlers and the coordinators' services exchange with the data plane: the plain
records they pass (LeaderAndIsr and StopReplica states, fetch and produce results, ListOffsets'
answer) and ``ReplicaView``, the Protocol of what they call on the broker's replica manager.

A leaf, like ``roles.py`` (which types ``BrokerView.replica_manager`` with ``ReplicaView``): it
imports only the standard library, so the security, log and groups packages may reach it where
they may not reach the replica package (pyproject's import contracts). The replica manager
(``replica/manager.py``) builds and returns these records; a hosted partition, its log and its
producers are named here by Protocols of the members callers read. ``tests/reference/test_roles.py``
checks that the replica manager has every member ``ReplicaView`` declares.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class PartitionState:
    """One partition of a LeaderAndIsr request, version-independent."""

    topic: str
    topic_id: uuid.UUID
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    is_new: bool = False
    leader_recovery_state: int = 0


@dataclass(frozen=True)
class StopReplicaState:
    """One partition of a StopReplica request; ``leader_epoch`` -2 means "deleting the topic"."""

    topic: str
    partition: int
    leader_epoch: int
    delete: bool


@dataclass
class FetchPartition:
    """One partition a Fetch asks for."""

    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1


@dataclass
class FetchResult:
    """What a fetch read of one partition."""

    error: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes = b""
    diverging: tuple[int, int] | None = None
    #: read_committed consumers: (producer id, first offset) of the aborted transactions the
    #: records returned overlap (None for other readers)
    aborted: list[tuple[int, int]] | None = None


@dataclass
class ProduceResult:
    """What an append did to one partition."""

    error: int = 0
    base_offset: int = -1
    log_start_offset: int = -1
    message: str | None = None
    #: the append time the leader stamped (LogAppendTime topics), else -1
    log_append_time: int = -1


@dataclass
class OffsetAnswer:
    """ListOffsets' answer for one partition."""

    error: int = 0
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


class ProducerEntry(Protocol):
    """A producer's state in one partition (``log.producer_state.ProducerEntry``)."""

    @property
    def epoch(self) -> int: ...
    @property
    def coordinator_epoch(self) -> int: ...
    @property
    def txn_first_offset(self) -> int | None: ...
    @property
    def last_timestamp(self) -> int: ...
    @property
    def last_seq(self) -> int: ...


class Producers(Protocol):
    """A partition's producers (``log.producer_state.ProducerStateManager``)."""

    @property
    def producers(self) -> Mapping[int, ProducerEntry]: ...

    def guard(self, producer_id: int) -> int: ...


class HostedLog(Protocol):
    """A hosted partition's log (``log.partition_log.PartitionLog``), as far as it is read."""

    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def producers(self) -> Producers: ...


class HostedPartition(Protocol):
    """A partition hosted by this broker (``replica.partition.Partition``)."""

    @property
    def topic(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def log(self) -> HostedLog: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def is_leader(self) -> bool: ...


class ReplicaView(Protocol):
    """What handlers and the coordinators' services call on the broker's replica manager
    (``replica.manager.ReplicaManager``); each call that names a partition not led (or, with
    ``leader=False``, not hosted) here raises ``KafkaError``."""

    @property
    def partitions(self) -> Mapping[TopicPartition, HostedPartition]: ...

    async def apply_leader_and_isr(
        self, states: list[PartitionState]
    ) -> dict[TopicPartition, int]: ...

    async def stop_replicas(self, stops: list[StopReplicaState]) -> dict[TopicPartition, int]: ...

    def add_leadership_listener(self, callback: Callable[[HostedPartition], None]) -> None: ...

    def partition_or_error(
        self, topic: str, index: int, *, leader: bool = True
    ) -> HostedPartition: ...

    async def append_records(
        self,
        acks: int,
        timeout_ms: int,
        entries: list[tuple[str, int, bytes | None]],
        *,
        produce_version: int = 11,
        internal: bool = False,
        guards: dict[TopicPartition, tuple[int, int]] | None = None,
    ) -> dict[TopicPartition, ProduceResult]: ...

    async def append_markers(
        self, timeout_ms: int, markers: list[tuple[str, int, int, int, int, bool, int]]
    ) -> dict[TopicPartition, int]: ...

    def transaction_open(
        self, topic: str, index: int, producer_id: int, epoch: int | None = None
    ) -> bool: ...

    async def fetch(
        self,
        replica_id: int,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        isolation_level: int,
        requests: list[FetchPartition],
    ) -> list[FetchResult]: ...

    def read(
        self, topic: str, index: int, offset: int, max_bytes: int, committed: bool = True
    ) -> bytes: ...

    def list_offset(
        self,
        replica_id: int,
        isolation: int,
        topic: str,
        index: int,
        current_leader_epoch: int,
        timestamp: int,
    ) -> OffsetAnswer: ...

    def delete_records(self, topic: str, index: int, offset: int) -> int: ...
