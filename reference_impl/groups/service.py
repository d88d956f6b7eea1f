"""The group coordinator on a broker: asyncio time, the replica manager's log, leadership.

``GroupService`` is what the group handlers talk to. It wraps the single-threaded
``GroupCoordinator`` (callbacks become awaitables) and connects it to the broker:

* records go to ``__consumer_offsets`` through ``ReplicaManager.append_records(acks=-1,
  internal=True)``, so an answer that depends on them waits for the ISR, like Kafka's;
* when this broker becomes leader of a ``__consumer_offsets`` partition (the replica manager's
  leadership listener) the coordinator replays that partition up to its log end, answering
  COORDINATOR_LOAD_IN_PROGRESS meanwhile; when it stops leading one, the groups are unloaded;
* FindCoordinator asks the metadata cache who leads the group's partition, and creates the
  topic through the controller (``node.create_topic``) the first time it is missing.

The partition count is the configured ``offsets_topic_partitions`` on every broker (the
reference creates the topic with it), never read back from metadata: a count seen while the
topic is only partly known would send groups to the wrong coordinator.

``service_for(node)`` attaches one service to a broker node the first time a group handler is
built (before the listener opens, so before any LeaderAndIsr). In-process tests construct a
GroupService with ``LocalPlacement`` and a MemoryOffsetsStore instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Protocol

from conformance.protocol import ErrorCode
from conformance.protocol.internal_topics import OFFSETS_TOPIC
from reference_impl.data_plane import HostedPartition, ReplicaView
from reference_impl.groups.consumer import HeartbeatRequest, HeartbeatResult
from reference_impl.groups.coordinator import GroupConfig, GroupCoordinator
from reference_impl.groups.group import JoinRequest, JoinResult, SyncResult
from reference_impl.groups.group_types import OffsetAndMetadata, TopicPartition
from reference_impl.groups.offsets import TxnCommit
from reference_impl.groups.scheduler import AsyncioScheduler
from reference_impl.groups.share import ShareHeartbeatRequest, ShareHeartbeatResult
from reference_impl.groups.store import (
    AppendDone,
    LoadedRecord,
    Records,
    Txn,
    decode_loaded,
    encode_records,
)
from reference_impl.roles import BrokerView

log = logging.getLogger(__name__)

#: how long an append to __consumer_offsets may wait for the ISR (Kafka: offsets.commit.timeout.ms)
COMMIT_TIMEOUT_MS = 5000
LOAD_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class Coordinator:
    """A FindCoordinator answer for one key."""

    error: int
    node_id: int = -1
    host: str = ""
    port: int = -1
    message: str | None = None


class Placement(Protocol):
    async def locate(self, partition: int, listener: str) -> Coordinator:
        """Which broker coordinates ``__consumer_offsets`` partition ``partition``."""
        ...


@dataclass
class LocalPlacement:
    """Every group is coordinated by one known node (a single in-process coordinator)."""

    node_id: int
    host: str
    port: int

    async def locate(self, partition: int, listener: str) -> Coordinator:
        return Coordinator(0, self.node_id, self.host, self.port)


class GroupService:
    def __init__(
        self,
        coordinator: GroupCoordinator,
        placement: Placement,
        *,
        partition_exists: Callable[[str, int], bool] | None = None,
    ) -> None:
        self.coordinator = coordinator
        self.placement = placement
        #: OffsetCommit answers UNKNOWN_TOPIC_OR_PARTITION for partitions this says do not exist
        self.partition_exists = partition_exists or (lambda topic, partition: True)

    # -- the awaitable face of the coordinator ------------------------------------------------

    async def join(self, req: JoinRequest) -> JoinResult:
        fut: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        self.coordinator.classic.join_group(req, _resolver(fut))
        return await fut

    async def sync(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult:
        fut: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        self.coordinator.classic.sync_group(
            group_id,
            generation_id,
            member_id,
            group_instance_id,
            protocol_type,
            protocol_name,
            assignments,
            _resolver(fut),
        )
        return await fut

    async def consumer_heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        fut: asyncio.Future[HeartbeatResult] = asyncio.get_running_loop().create_future()
        self.coordinator.consumer.heartbeat(req, _resolver(fut))
        return await fut

    async def share_heartbeat(self, req: ShareHeartbeatRequest) -> ShareHeartbeatResult:
        fut: asyncio.Future[ShareHeartbeatResult] = asyncio.get_running_loop().create_future()
        self.coordinator.share.heartbeat(req, _resolver(fut))
        return await fut

    async def commit(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        api_version: int = 9,
    ) -> dict[TopicPartition, int]:
        unknown = {tp for tp in offsets if not self.partition_exists(*tp)}
        known = {tp: om for tp, om in offsets.items() if tp not in unknown}
        results = dict.fromkeys(unknown, int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        if known:
            fut: asyncio.Future[dict[TopicPartition, int]] = (
                asyncio.get_running_loop().create_future()
            )
            self.coordinator.offsets.commit_offsets(
                group_id,
                member_id,
                group_instance_id,
                generation_id,
                known,
                _resolver(fut),
                api_version,
            )
            results.update(await fut)
        return results

    async def txn_commit(self, req: TxnCommit) -> dict[TopicPartition, int]:
        fut: asyncio.Future[dict[TopicPartition, int]] = asyncio.get_running_loop().create_future()
        self.coordinator.offsets.txn_commit_offsets(req, _resolver(fut))
        return await fut

    def transaction_completed(self, producer_id: int, partitions: list[int], commit: bool) -> None:
        """WriteTxnMarkers wrote a marker on these ``__consumer_offsets`` partitions."""
        self.coordinator.offsets.transaction_completed(producer_id, partitions, commit)

    async def delete(self, group_ids: list[str]) -> dict[str, int]:
        fut: asyncio.Future[dict[str, int]] = asyncio.get_running_loop().create_future()
        self.coordinator.delete_groups(group_ids, _resolver(fut))
        return await fut

    async def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> tuple[int, dict[tuple[str, int], int]]:
        fut: asyncio.Future[tuple[int, dict[tuple[str, int], int]]] = (
            asyncio.get_running_loop().create_future()
        )
        self.coordinator.offsets.delete_offsets(
            group_id, partitions, lambda e, r: _resolver(fut)((e, r))
        )
        return await fut

    async def find(self, key: str, listener: str) -> Coordinator:
        return await self.placement.locate(self.coordinator.partition_for(key), listener)


def _resolver(fut: asyncio.Future) -> Callable[[Any], None]:
    def resolve(value: Any) -> None:
        if not fut.done():
            fut.set_result(value)

    return resolve


# -- a broker's service -----------------------------------------------------------------------


def group_config(settings: dict[str, Any] | None) -> GroupConfig:
    """GroupConfig from the node's ``settings["groups"]`` section (field names as keys)."""
    known = {f.name for f in fields(GroupConfig)}
    values = {k: v for k, v in (settings or {}).items() if k in known}
    unknown = sorted(set(settings or {}) - known - {"commit_timeout_ms"})
    if unknown:
        log.warning("unknown groups settings ignored: %s", ", ".join(unknown))
    return GroupConfig(**values)


class ReplicaOffsetsStore:
    """Appends through the replica manager with acks=all; ``done`` runs on the event loop."""

    def __init__(
        self, replica_manager: ReplicaView, spawn: Callable, wall_ms: Callable[[], int]
    ) -> None:
        self.replica_manager = replica_manager
        self.spawn = spawn
        self.wall_ms = wall_ms
        self.timeout_ms = COMMIT_TIMEOUT_MS

    def append(self, partition: int, records: Records, done: AppendDone, txn: Txn = None) -> None:
        data = encode_records(records, self.wall_ms(), producer=txn)
        self.spawn(self._append(partition, data, done), f"offsets-append-{partition}")

    async def _append(self, partition: int, data: bytes, done: AppendDone) -> None:
        try:
            results = await self.replica_manager.append_records(
                -1, self.timeout_ms, [(OFFSETS_TOPIC, partition, data)], internal=True
            )
            r = results[(OFFSETS_TOPIC, partition)]
            error, base = r.error, r.base_offset
        except Exception:
            log.exception("appending to %s-%d failed", OFFSETS_TOPIC, partition)
            error, base = int(ErrorCode.UNKNOWN_SERVER_ERROR), -1
        done(error, base)


class ClusterPlacement:
    """The leader of the key's partition of an internal topic, per the metadata cache; creates
    the topic (``__consumer_offsets`` here; the transaction coordinator places its
    ``__transaction_state`` the same way)."""

    topic = OFFSETS_TOPIC

    def __init__(self, node: BrokerView, coordinator: GroupCoordinator | None) -> None:
        self.node = node
        self.coordinator = coordinator
        self._creating: asyncio.Task | None = None

    async def locate(self, partition: int, listener: str) -> Coordinator:
        cache = self.node.metadata_cache
        topic = cache.topics.get(self.topic)
        if topic is None:
            await self._create()
            return Coordinator(int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        info = topic.partitions.get(partition)
        if info is None or info.leader < 0 or not cache.alive(info.leader):
            return Coordinator(int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        endpoint = cache.endpoint(info.leader, listener)
        if endpoint is None:
            return Coordinator(int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        return Coordinator(0, info.leader, endpoint.host, endpoint.port)

    async def _create(self) -> None:
        if self._creating is None or self._creating.done():
            self._creating = asyncio.ensure_future(self._create_topic())
        await asyncio.shield(self._creating)

    def shape(self, live_brokers: int) -> tuple[int, int, dict[str, str]]:
        """(partitions, replication factor, configs) the topic is created with."""
        assert self.coordinator is not None
        wanted = getattr(self.node.config, "offsets_topic_replication_factor", 3)
        rf = max(1, min(wanted, live_brokers))
        configs = {"cleanup.policy": "compact", "compression.type": "producer"}
        return self.coordinator.config.offsets_topic_partitions, rf, configs

    async def _create_topic(self) -> None:
        partitions, rf, configs = self.shape(len(self.node.metadata_cache.brokers))
        error = await self.node.create_topic(self.topic, partitions, rf, configs)
        if error not in (0, 36):  # TOPIC_ALREADY_EXISTS is fine
            log.warning("creating %s failed with error %d", self.topic, error)


class BrokerGroups(GroupService):
    """GroupService wired to a broker node's replica manager and metadata cache."""

    def __init__(self, node: BrokerView) -> None:
        scheduler = AsyncioScheduler()
        settings = (getattr(node.config, "settings", None) or {}).get("groups")
        config = group_config(settings)
        rm = node.replica_manager
        store = ReplicaOffsetsStore(rm, node.spawn, scheduler.wall_ms)
        if settings and "commit_timeout_ms" in settings:
            store.timeout_ms = int(settings["commit_timeout_ms"])
        cache = node.metadata_cache
        coordinator = GroupCoordinator(
            scheduler,
            store,
            config,
            topics=lambda: {
                name: (t.topic_id, len(t.partitions)) for name, t in cache.topics.items()
            },
            group_configs=lambda group_id: cache.group_configs.get(group_id, {}),
        )
        super().__init__(
            coordinator,
            ClusterPlacement(node, coordinator),
            partition_exists=lambda t, p: node.metadata_cache.partition(t, p) is not None,
        )
        self.node = node
        self.replica_manager = rm
        #: __consumer_offsets partition -> leader epoch we loaded it for
        self._led: dict[int, int] = {}
        if hasattr(rm, "add_leadership_listener"):
            rm.add_leadership_listener(self._leadership_changed)
        else:
            log.warning("the replica manager has no leadership listener: groups cannot load")

    def _leadership_changed(self, partition: HostedPartition) -> None:
        if partition.topic != OFFSETS_TOPIC:
            return
        index = partition.index
        if getattr(partition, "role", None) == "leader":
            if self._led.get(index) == partition.leader_epoch:
                return
            log.info(
                "leading %s-%d (epoch %d): loading", OFFSETS_TOPIC, index, partition.leader_epoch
            )
            self._led[index] = partition.leader_epoch
            token = self.coordinator.start_loading(index)
            self.node.spawn(self._load(index, token), f"offsets-load-{index}")
        elif index in self._led:
            log.info("no longer leading %s-%d: groups unloaded", OFFSETS_TOPIC, index)
            del self._led[index]
            self.coordinator.unload(index)

    async def _load(self, index: int, token: int) -> None:
        """Replay the partition from its log start to its log end (what a new leader has)."""
        records: list[LoadedRecord] = []
        try:
            p = self.replica_manager.partition_or_error(OFFSETS_TOPIC, index)
            offset, end = p.log.log_start_offset, p.log.log_end_offset
            while offset < end:
                data = self.replica_manager.read(
                    OFFSETS_TOPIC, index, offset, LOAD_CHUNK_BYTES, committed=False
                )
                chunk, next_offset = decode_loaded(data)
                if next_offset <= offset:
                    break
                records.extend(chunk)
                offset = next_offset
                await asyncio.sleep(0)
        except Exception as e:
            # lost leadership while reading (the listener unloads), or the log failed
            log.warning("loading %s-%d stopped: %r", OFFSETS_TOPIC, index, e)
            if self._led.get(index) is None:
                return
        if self.coordinator.finish_loading(index, token, records):
            log.info(
                "%s-%d loaded: %d records, %d groups",
                OFFSETS_TOPIC,
                index,
                len(records),
                sum(1 for g in self.coordinator.groups.values() if g.partition == index),
            )


def service_for(node: BrokerView) -> GroupService:
    """The node's GroupService, created (and attached as ``node.groups``) on first use."""
    service = getattr(node, "groups", None)
    if service is None:
        service = BrokerGroups(node)
        node.groups = service
    return service
