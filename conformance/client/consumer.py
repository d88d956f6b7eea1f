"""The suite's consumer: assigned partitions, seek/poll with Fetch v4+, committed offsets, and
the KIP-42 interceptor chain.

``poll`` fetches from each partition's leader at the highest Fetch version both sides know (by
topic id from v13 when Metadata gave ids), verifies each batch's CRC-32C while decoding it,
skips control batches, deserialises, and gives the records the KIP-42 checksum and sizes; then
the interceptors' ``on_consume`` runs and poll returns what the chain returned (positions move
with what was fetched, whatever the interceptors do). ``commit_sync`` commits through the group
coordinator and then calls ``on_commit`` with the committed offsets. Records are read
uncommitted (the client writes no transactions).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from conformance.client import errors
from conformance.client.checksum import record_checksum, serialized_size
from conformance.client.coordinator import GroupCoordinator
from conformance.client.group import REJOIN, GroupMembership
from conformance.client.interceptors import (
    ClusterResourceListeners,
    ConsumerInterceptors,
    instantiate,
)
from conformance.client.metadata import ClusterMetadata, SaslSettings
from conformance.client.record_types import (
    NO_TIMESTAMP,
    ConsumerRecord,
    ConsumerRecords,
    OffsetAndMetadata,
    TopicPartition,
)
from conformance.client.serialization import Deserializer, bytes_deserializer
from conformance.protocol import ApiKey, Codec, ErrorCode
from conformance.protocol.records import RecordBatch, decode_record_set
from conformance.protocol.spec import ZERO_UUID

log = logging.getLogger(__name__)

#: Fetch v4 is the first with record batch v2 and isolation levels
MIN_FETCH_VERSION = 4
#: the last Fetch version that names topics (v13 uses topic ids)
LAST_FETCH_BY_NAME = 12
MIN_LIST_OFFSETS_VERSION = 1
EARLIEST, LATEST = -2, -1
RESETS = {"earliest": EARLIEST, "latest": LATEST, "none": None}


class NoOffsetError(errors.ClientError):
    """A partition has no position, no committed offset, and ``auto_offset_reset='none'``."""


class Consumer:
    """An asyncio Kafka consumer of assigned partitions (``async with Consumer(...) as c``)."""

    def __init__(
        self,
        bootstrap: str | Iterable[Any],
        *,
        group_id: str | None = None,
        codec: Codec | None = None,
        client_id: str = "kafka-conformance-consumer",
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
        interceptors: Iterable[Any] = (),
        config: Mapping[str, Any] | None = None,
        auto_offset_reset: str = "earliest",
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52428800,
        max_partition_fetch_bytes: int = 1048576,
        request_timeout_ms: float = 30000,
        retry_backoff_ms: float = 100,
        default_api_timeout_ms: float = 60000,
        session_timeout_ms: float = 10000,
        rebalance_timeout_ms: float = 30000,
        heartbeat_interval_ms: float = 1000,
        commit_on_rebalance: bool = True,
        sasl: SaslSettings | None = None,
    ) -> None:
        if auto_offset_reset not in RESETS:
            raise ValueError(f"auto_offset_reset must be one of {sorted(RESETS)}")
        self.group_id = group_id
        self.key_deserializer = key_deserializer or bytes_deserializer
        self.value_deserializer = value_deserializer or bytes_deserializer
        self.auto_offset_reset = auto_offset_reset
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_wait = fetch_max_wait_ms / 1000
        self.fetch_max_bytes = fetch_max_bytes
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.request_timeout = request_timeout_ms / 1000
        self.api_timeout = default_api_timeout_ms / 1000
        settings = {
            "client_id": client_id,
            "group_id": group_id,
            "bootstrap_servers": bootstrap,
            "auto_offset_reset": auto_offset_reset,
            **(config or {}),
        }
        self.interceptors = ConsumerInterceptors(instantiate(interceptors, settings))
        self.metadata = ClusterMetadata(
            bootstrap,
            codec=codec,
            client_id=client_id,
            sasl=sasl,
            request_timeout=self.request_timeout,
            retry_backoff=retry_backoff_ms / 1000,
            listeners=ClusterResourceListeners(
                [*self.interceptors.interceptors, self.key_deserializer, self.value_deserializer]
            ),
        )
        self.coordinator = GroupCoordinator(self.metadata, group_id) if group_id else None
        self._assigned: list[TopicPartition] = []
        self._positions: dict[TopicPartition, int] = {}
        self._reset: dict[TopicPartition, int | None] = {}
        self.session_timeout = session_timeout_ms / 1000
        self.rebalance_timeout = rebalance_timeout_ms / 1000
        self.heartbeat_interval = heartbeat_interval_ms / 1000
        self.commit_on_rebalance = commit_on_rebalance
        self.membership: GroupMembership | None = None
        self._closed = False

    # --- life cycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        await self.metadata.start()

    async def __aenter__(self) -> Consumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Leave the group (committing first with ``commit_on_rebalance``), close the
        interceptors (once) and the connections."""
        if self._closed:
            return
        try:
            if self.membership is not None:
                await self._revoke()
                await self.membership.leave()
        finally:
            self._closed = True
            self.interceptors.close()
            await self.metadata.close()

    # --- assignment and positions --------------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        """Join the consumer group (``group_id``) for ``topics``; partitions come from the
        group's assignment, on the next poll."""
        if self.coordinator is None:
            raise errors.ClientError("subscribe needs a group_id")
        self.membership = GroupMembership(
            self.coordinator,
            topics,
            session_timeout=self.session_timeout,
            rebalance_timeout=self.rebalance_timeout,
            heartbeat_interval=self.heartbeat_interval,
        )
        self._set_assignment([])

    async def _rejoin(self) -> None:
        assert self.membership is not None
        await self._revoke()
        # eager rebalancing: every partition is given up; positions come from commits again
        self._positions.clear()
        self._reset.clear()
        self._set_assignment(await self.membership.join(self.rebalance_timeout + self.api_timeout))

    async def _revoke(self) -> None:
        """Before giving partitions up: commit their positions (``commit_on_rebalance``)."""
        if not (self.commit_on_rebalance and self._positions and self.membership):
            return
        if not self.membership.member_id:
            return
        try:
            await self.commit_sync(dict(self._positions))
        except errors.FAILURES as e:
            log.info("commit before rebalance failed: %s", e)

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Take these partitions (no group membership)."""
        if self.membership is not None:
            raise errors.ClientError("assign() on a consumer that subscribed to a group")
        self._set_assignment(partitions)

    def _set_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        self._assigned = list(dict.fromkeys(TopicPartition(*tp) for tp in partitions))
        keep = set(self._assigned)
        self._positions = {tp: o for tp, o in self._positions.items() if tp in keep}

    def assignment(self) -> list[TopicPartition]:
        return list(self._assigned)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._check_assigned(tp)
        self._positions[tp] = offset
        self._reset.pop(tp, None)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._seek_to(partitions, EARLIEST)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._seek_to(partitions, LATEST)

    def _seek_to(self, partitions: Iterable[TopicPartition] | None, where: int) -> None:
        for tp in self._assigned if partitions is None else partitions:
            self._check_assigned(tp)
            self._positions.pop(tp, None)
            self._reset[tp] = where

    def _check_assigned(self, tp: TopicPartition) -> None:
        if tp not in self._assigned:
            raise errors.ClientError(f"{tp} is not assigned to this consumer")

    async def position(self, tp: TopicPartition) -> int:
        """The offset of the next record poll will return for ``tp``."""
        self._check_assigned(tp)
        await self._ensure_positions()
        return self._positions[tp]

    async def _ensure_positions(self) -> None:
        missing = [tp for tp in self._assigned if tp not in self._positions]
        if not missing:
            return
        undecided = [tp for tp in missing if tp not in self._reset]
        if undecided and self.coordinator is not None:
            committed = await self.coordinator.fetch(undecided, timeout=self.api_timeout)
            for tp in undecided:
                om = committed.get(tp)
                if om is not None:
                    self._positions[tp] = om.offset
        for tp in missing:
            if tp not in self._positions and tp not in self._reset:
                where = RESETS[self.auto_offset_reset]
                if where is None:
                    raise NoOffsetError(f"{tp} has no position and no committed offset")
                self._reset[tp] = where
        if self._reset:
            await self._list_offsets(dict(self._reset))

    async def _list_offsets(self, wanted: dict[TopicPartition, int | None]) -> None:
        """ListOffsets (earliest / latest) for partitions to reset, from their leaders."""
        deadline = time.monotonic() + self.api_timeout
        pending = {tp: w for tp, w in wanted.items() if w is not None}
        while pending:
            by_node = await self._leaders(pending)
            for node, tps in by_node.items():
                try:
                    _, body = await self.metadata.request(
                        node,
                        ApiKey.LIST_OFFSETS,
                        lambda v, tps=tps: self._list_offsets_request(tps, pending),
                        min_version=MIN_LIST_OFFSETS_VERSION,
                    )
                except (ConnectionError, TimeoutError):
                    continue
                for t in body["Topics"]:
                    for p in t["Partitions"]:
                        tp = TopicPartition(t["Name"], p["PartitionIndex"])
                        if p["ErrorCode"] == ErrorCode.NONE:
                            self._positions[tp] = p["Offset"]
                            self._reset.pop(tp, None)
                            pending.pop(tp, None)
                        elif not errors.is_retriable(p["ErrorCode"]):
                            raise errors.KafkaError(p["ErrorCode"], context=f"ListOffsets {tp}")
            if pending:
                if time.monotonic() > deadline:
                    raise errors.ClientError(f"no offsets for {sorted(pending)}")
                await asyncio.sleep(self.metadata.retry_backoff)
                await self.metadata.refresh([tp.topic for tp in pending])

    def _list_offsets_request(self, tps: list[TopicPartition], where: dict) -> dict:
        topics: dict[str, list[dict]] = {}
        for tp in tps:
            topics.setdefault(tp.topic, []).append(
                {"PartitionIndex": tp.partition, "CurrentLeaderEpoch": -1, "Timestamp": where[tp]}
            )
        return {
            "ReplicaId": -1,
            "IsolationLevel": 0,
            "Topics": [{"Name": t, "Partitions": ps} for t, ps in topics.items()],
        }

    async def _leaders(self, tps: Iterable[TopicPartition]) -> dict[int, list[TopicPartition]]:
        """Partitions by their leader (metadata refreshed once when a leader is unknown)."""
        tps = list(tps)
        if any(self.metadata.leader(tp) is None for tp in tps):
            await self.metadata.refresh({tp.topic for tp in tps})
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in tps:
            leader = self.metadata.leader(tp)
            if leader is not None:
                by_node.setdefault(leader, []).append(tp)
        return by_node

    # --- poll ----------------------------------------------------------------------------------

    async def poll(self, timeout_ms: float = 1000) -> ConsumerRecords:
        """Records fetched since the last poll, after ``on_consume`` (empty after the timeout).

        As in Kafka, the interceptors see only non-empty results.
        """
        if self._closed:
            raise errors.ClientError("the consumer is closed")
        if not self._assigned and self.membership is None:
            raise errors.ClientError("no partition is assigned")
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            if self.membership is not None and self.membership.needs_join:
                await self._rejoin()
            if not self._assigned:
                await asyncio.sleep(min(max(deadline - time.monotonic(), 0.0), 0.1))
                if time.monotonic() >= deadline:
                    return ConsumerRecords()
                continue
            await self._ensure_positions()
            wait = min(max(deadline - time.monotonic(), 0.0), self.fetch_max_wait)
            records = await self._fetch_once(wait)
            if records:
                return self.interceptors.on_consume(ConsumerRecords.of(records))
            if time.monotonic() >= deadline:
                return ConsumerRecords()

    async def _fetch_once(self, wait: float) -> list[ConsumerRecord]:
        by_node = await self._leaders(tp for tp in self._assigned if tp in self._positions)
        if not by_node:
            await asyncio.sleep(min(wait, self.metadata.retry_backoff))
            return []
        results = await asyncio.gather(
            *(self._fetch_from(node, tps, wait) for node, tps in by_node.items()),
            return_exceptions=True,
        )
        out: list[ConsumerRecord] = []
        lost = False
        for r in results:
            if isinstance(r, BaseException):
                if not isinstance(r, ConnectionError | TimeoutError):
                    raise r
                log.info("fetch failed: %s", r)
                lost = True
                continue
            out.extend(r)
        if lost:
            # the leader may have moved: learn where before the next fetch
            try:
                await self.metadata.refresh({tp.topic for tp in self._assigned})
            except ConnectionError as e:
                log.info("metadata refresh failed: %s", e)
                await asyncio.sleep(self.metadata.retry_backoff)
        return out

    def _fetch_request(self, version: int, tps: list[TopicPartition], wait: float) -> dict:
        topics: dict[str, list[dict]] = {}
        for tp in tps:
            topics.setdefault(tp.topic, []).append(
                {
                    "Partition": tp.partition,
                    "CurrentLeaderEpoch": -1,
                    "FetchOffset": self._positions[tp],
                    "LastFetchedEpoch": -1,
                    "LogStartOffset": -1,
                    "PartitionMaxBytes": self.max_partition_fetch_bytes,
                }
            )
        return {
            "ClusterId": None,
            "ReplicaId": -1,
            "ReplicaState": {"ReplicaId": -1, "ReplicaEpoch": -1},
            "MaxWaitMs": int(wait * 1000),
            "MinBytes": self.fetch_min_bytes,
            "MaxBytes": self.fetch_max_bytes,
            "IsolationLevel": 0,
            "SessionId": 0,
            "SessionEpoch": -1,
            "Topics": [
                {"Topic": t, "TopicId": self.metadata.topic_id(t), "Partitions": ps}
                for t, ps in topics.items()
            ],
            "ForgottenTopicsData": [],
            "RackId": "",
        }

    async def _fetch_from(
        self, node: int, tps: list[TopicPartition], wait: float
    ) -> list[ConsumerRecord]:
        by_id = all(self.metadata.topic_id(tp.topic) != ZERO_UUID for tp in tps)
        version, body = await self.metadata.request(
            node,
            ApiKey.FETCH,
            lambda v: self._fetch_request(v, tps, wait),
            min_version=MIN_FETCH_VERSION,
            max_version=None if by_id else LAST_FETCH_BY_NAME,
            timeout=self.request_timeout + wait,
        )
        errors.raise_for(body["ErrorCode"], context=f"Fetch from broker {node}")
        out: list[ConsumerRecord] = []
        stale = False
        for t in body["Responses"]:
            topic = t["Topic"] if version <= LAST_FETCH_BY_NAME else None
            if topic is None:
                topic = self.metadata.topic_name(t["TopicId"])
            if topic is None:
                stale = True
                continue
            for p in t["Partitions"]:
                tp = TopicPartition(topic, p["PartitionIndex"])
                if tp not in self._positions:
                    continue
                code = p["ErrorCode"]
                if code == ErrorCode.NONE:
                    out.extend(self._records(tp, p["Records"]))
                elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    where = RESETS[self.auto_offset_reset]
                    if where is None:
                        raise errors.KafkaError(code, context=f"Fetch {tp}")
                    self._positions.pop(tp, None)
                    self._reset[tp] = where
                elif errors.is_retriable(code):
                    stale |= code in errors.STALE_METADATA
                else:
                    raise errors.KafkaError(code, context=f"Fetch {tp}")
        if stale:
            await self.metadata.refresh([tp.topic for tp in tps])
        return out

    def _records(self, tp: TopicPartition, data: bytes | None) -> list[ConsumerRecord]:
        """Decode a partition's records (batch CRCs checked), from the current position on."""
        if not data:
            return []
        position = self._positions[tp]
        out: list[ConsumerRecord] = []
        for entry in decode_record_set(data).entries:
            is_batch = isinstance(entry, RecordBatch)
            epoch = entry.partition_leader_epoch if is_batch else None
            next_offset = entry.next_offset if is_batch else None
            if not (is_batch and entry.is_control):
                for lr in entry.log_records():
                    if lr.offset < position:
                        continue
                    out.append(self._consumer_record(tp, lr, epoch))
                    next_offset = max(next_offset or 0, lr.offset + 1)
            if next_offset is not None and next_offset > position:
                position = next_offset
        self._positions[tp] = position
        return out

    def _consumer_record(self, tp: TopicPartition, lr, epoch: int | None) -> ConsumerRecord:
        try:
            key = self.key_deserializer(tp.topic, lr.key)
            value = self.value_deserializer(tp.topic, lr.value)
        except Exception as e:
            raise errors.SerializationError(
                f"deserialising the record at {tp}@{lr.offset} failed: {e!r}"
            ) from e
        return ConsumerRecord(
            topic=tp.topic,
            partition=tp.partition,
            offset=lr.offset,
            timestamp=NO_TIMESTAMP if lr.timestamp is None else lr.timestamp,
            timestamp_type=lr.timestamp_type,
            key=key,
            value=value,
            headers=lr.headers,
            checksum=record_checksum(lr.key, lr.value, lr.headers),
            serialized_key_size=serialized_size(lr.key),
            serialized_value_size=serialized_size(lr.value),
            leader_epoch=None if epoch is None or epoch < 0 else epoch,
        )

    # --- offsets -------------------------------------------------------------------------------

    async def commit_sync(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Commit ``offsets`` (default: the current positions); then ``on_commit``."""
        if self.coordinator is None:
            raise errors.ClientError("commit_sync needs a group_id")
        if offsets is None:
            await self._ensure_positions()
            offsets = {tp: self._positions[tp] for tp in self._assigned}
        committed = {
            TopicPartition(*tp): om if isinstance(om, OffsetAndMetadata) else OffsetAndMetadata(om)
            for tp, om in offsets.items()
        }
        if committed:
            group = self.membership
            try:
                await self.coordinator.commit(
                    committed,
                    generation=group.generation if group else -1,
                    member_id=group.member_id if group else "",
                    timeout=timeout or self.api_timeout,
                )
            except errors.KafkaError as e:
                if group is not None and e.code in REJOIN:
                    group.needs_join = True
                raise
        self.interceptors.on_commit(committed)
        return committed

    async def committed(
        self, partitions: Iterable[TopicPartition], *, timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (OffsetFetch)."""
        if self.coordinator is None:
            raise errors.ClientError("committed() needs a group_id")
        return await self.coordinator.fetch(
            [TopicPartition(*tp) for tp in partitions], timeout=timeout or self.api_timeout
        )
