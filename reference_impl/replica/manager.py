"""The broker's partitions: roles from the controller, produce, fetch, ISR upkeep, checkpoints.

``create(node)`` is what the broker calls (``replica/api.py``). Logs live in
``<data_dir>/logs/<topic>-<partition>/``; every log found there is opened (and recovered) at
start-up, before the broker registers, and attached to a partition when the controller's
LeaderAndIsr names it. The high watermarks are checkpointed to
``<data_dir>/logs/replication-offset-checkpoint`` (Kafka's format) every few seconds and on
shutdown, so a restarted replica that becomes leader at once does not expose less than it
had committed.

Produce (``append_records``) and Fetch (``fetch``) are the handlers' entry points;
``list_offset`` serves ListOffsets; the coordinator of consumer groups (``groups/``) uses
``append_records(..., internal=True)``, ``read`` and ``add_leadership_listener``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.protocol import ApiKey, ErrorCode, KafkaError
from conformance.protocol.records.header import HEADER_SIZE, parse_header
from reference_impl.data_plane import (
    FetchPartition,
    FetchResult,
    OffsetAnswer,
    PartitionState,
    ProduceResult,
    ReplicaView,
    StopReplicaState,
    TopicPartition,
)
from reference_impl.log import LogConfig, PartitionLog
from reference_impl.log.validation import validate_batch, validate_internal_batch
from reference_impl.replica.allocator import keep_large_buffers
from reference_impl.replica.config import ReplicationConfig
from reference_impl.replica.faults import BrokerFaults, without_first_batch
from reference_impl.replica.fetcher import ReplicaFetcher
from reference_impl.replica.partition import FOLLOWER, LEADER, Partition
from reference_impl.roles import BrokerView
from reference_impl.tasks import CLOSE_TIMEOUT_S, stop_tasks

log = logging.getLogger(__name__)

HW_CHECKPOINT = "replication-offset-checkpoint"
TOPIC_ID_FILE = "partition.metadata"
EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -2, -1, -3, -4
#: ListOffsets' tiered-storage timestamps: latest tiered (-5, KIP-1005) and earliest pending
#: upload (-6, KIP-1023); with no tiered storage both find nothing (offset -1), as Kafka 4.4.0
#: answers them without remote storage
TIERED_ONLY = (-5, -6)
READ_COMMITTED = 1
#: DeleteRecords: an offset of -1 means the high watermark
DELETE_TO_HIGH_WATERMARK = -1


@dataclass
class _Pending:
    """Results of a produce, and what its acks=all answer still waits for."""

    results: dict[TopicPartition, ProduceResult] = field(default_factory=dict)
    waits: list[tuple[TopicPartition, Partition, int]] = field(default_factory=list)


def create(node: BrokerView) -> ReplicaManager:
    keep_large_buffers()  # a broker process: megabyte-sized record buffers all the time
    return ReplicaManager(node)


class ReplicaManager:
    def __init__(self, node: BrokerView) -> None:
        self.node = node
        self.node_id: int = node.node_id
        self.codec = node.codec
        settings = getattr(node.config, "settings", None) or {}
        self.replication = ReplicationConfig.from_settings(settings.get("replication"))
        self.log_defaults = LogConfig(**(settings.get("log") or {}))
        #: test-only faults (``replica/faults.py``): all off unless a project test sets them
        self.faults = BrokerFaults.from_settings(settings.get("faults"))
        #: ack_before_replication: where each partition's followers must stop reading
        self._held_back: dict[TopicPartition, int] = {}
        self.logs_dir = Path(node.data_dir) / "logs"
        self.partitions: dict[TopicPartition, Partition] = {}
        #: logs found on disk and not (or no longer) assigned a role
        self.logs: dict[TopicPartition, PartitionLog] = {}
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self._hw_checkpoint: dict[TopicPartition, int] = {}
        self._role_lock = asyncio.Lock()
        self._isr_wakeup = asyncio.Event()
        self._leadership_listeners: list[Callable[[Partition], None]] = []
        self._tasks: list[asyncio.Task] = []
        self.started = False

    @property
    def flush_replicated(self) -> bool:
        """Followers fsync what they fetched before their next fetch reports it as theirs."""
        return self.log_defaults.flush_on_acks_all

    def spawn(self, coro: Any, name: str) -> asyncio.Task:
        spawn = getattr(self.node, "spawn", None)
        task = spawn(coro, name) if spawn else asyncio.get_running_loop().create_task(coro)
        self._tasks.append(task)
        return task

    # -- the broker's calls (replica/api.py) ------------------------------------------------

    async def startup(self) -> None:
        if self.faults.forget_log_on_start:
            shutil.rmtree(self.logs_dir, ignore_errors=True)
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self._hw_checkpoint = _read_checkpoint(self.logs_dir / HW_CHECKPOINT)
        for d in sorted(self.logs_dir.iterdir()):
            key = _parse_dir(d)
            if key is None:
                continue
            self.logs[key] = PartitionLog(d, self._log_config(key[0]))
            if self.logs[key].recovery_truncated_bytes:
                log.warning(
                    "%s-%d: recovery cut %d bytes of damaged tail",
                    key[0],
                    key[1],
                    self.logs[key].recovery_truncated_bytes,
                )
        cache = getattr(self.node, "metadata_cache", None)
        if cache is not None:
            cache.add_listener(self._metadata_updated)
        self.started = True
        self.spawn(self._isr_loop(), "isr-maintenance")
        self.spawn(self._checkpoint_loop(), "hw-checkpoint")
        self.spawn(self._flush_loop(), "log-flusher")
        self.spawn(self._retention_loop(), "log-retention")

    async def apply_leader_and_isr(self, states: list[PartitionState]) -> dict[TopicPartition, int]:
        errors: dict[TopicPartition, int] = {}
        async with self._role_lock:
            for st in states:
                key = (st.topic, st.partition)
                p = self.partitions.get(key)
                if p is not None and not p.is_newer(st):
                    if st.leader_epoch < p.leader_epoch:
                        errors[key] = ErrorCode.STALE_CONTROLLER_EPOCH
                    continue
                if self.node_id not in st.replicas:
                    continue
                if p is None:
                    p = self._open_partition(st)
                if st.leader == self.node_id:
                    self._unfollow(key)
                    p.make_leader(st)
                else:
                    p.make_follower(st)
                    self._unfollow(key)
                    if st.leader >= 0:
                        self._fetcher(st.leader).add(p)
                for callback in self._leadership_listeners:
                    callback(p)
        self._isr_wakeup.set()
        return errors

    async def stop_replicas(self, stops: list[StopReplicaState]) -> dict[TopicPartition, int]:
        async with self._role_lock:
            for s in stops:
                key = (s.topic, s.partition)
                self._unfollow(key)
                p = self.partitions.pop(key, None)
                plog = p.log if p is not None else self.logs.get(key)
                if p is not None:
                    p.make_offline()
                    for callback in self._leadership_listeners:
                        callback(p)
                if plog is None:
                    continue
                if s.delete:
                    self.logs.pop(key, None)
                    self._hw_checkpoint.pop(key, None)
                    plog.delete()
                else:
                    self.logs[key] = plog
        return {}

    async def shutdown(self) -> None:
        for fetcher in list(self.fetchers.values()):
            await fetcher.stop()
        self.fetchers.clear()
        await stop_tasks(self._tasks, CLOSE_TIMEOUT_S)
        if self.started:
            self._write_checkpoint()
        for p in self.partitions.values():
            p.make_offline()
            p.log.close()
        for plog in self.logs.values():
            plog.close()
        self.partitions.clear()
        self.logs.clear()

    # -- partitions ------------------------------------------------------------------------

    def add_leadership_listener(self, callback: Callable[[Partition], None]) -> None:
        """``callback(partition)`` after every role change (groups follow __consumer_offsets)."""
        self._leadership_listeners.append(callback)

    def _log_config(self, topic: str) -> LogConfig:
        cache = getattr(self.node, "metadata_cache", None)
        configs = cache.topic_config(topic) if cache is not None else {}
        return self.log_defaults.with_topic_configs(configs)

    def _open_partition(self, st: PartitionState) -> Partition:
        key = (st.topic, st.partition)
        directory = self.logs_dir / f"{st.topic}-{st.partition}"
        plog = self.logs.pop(key, None)
        recorded = _read_topic_id(directory)
        if plog is not None and recorded not in (None, st.topic_id) and st.topic_id.int:
            log.info("%s-%d: log of an older topic with the same name: deleted", *key)
            plog.delete()
            plog = None
        if plog is None:
            plog = PartitionLog(directory, self._log_config(st.topic))
        if st.topic_id.int and recorded != st.topic_id:
            _write_topic_id(directory, st.topic_id)
        p = Partition(st.topic, st.partition, plog, self.node_id)
        p.high_watermark = min(self._hw_checkpoint.get(key, 0), plog.log_end_offset)
        self.partitions[key] = p
        return p

    def _fetcher(self, leader: int) -> ReplicaFetcher:
        f = self.fetchers.get(leader)
        if f is None:
            f = self.fetchers[leader] = ReplicaFetcher(self, leader)
            f.start()
        return f

    def _unfollow(self, key: TopicPartition) -> None:
        for f in self.fetchers.values():
            f.remove(key)

    def endpoint_of(self, broker_id: int) -> tuple[str, int] | None:
        cache = getattr(self.node, "metadata_cache", None)
        if cache is None:
            return None
        config = self.node.config
        name = config.inter_broker_listener or config.listeners[0].name
        ep = cache.endpoint(broker_id, name)
        return (ep.host, ep.port) if ep is not None else None

    def _metadata_updated(self, cache: Any) -> None:
        for (topic, _), p in self.partitions.items():
            p.log.config = self._log_config(topic)

    def partition_or_error(self, topic: str, index: int, *, leader: bool = True) -> Partition:
        p = self.partitions.get((topic, index))
        if p is None:
            cache = getattr(self.node, "metadata_cache", None)
            known = cache is not None and cache.partition(topic, index) is not None
            raise KafkaError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"{topic}-{index} is not hosted here",
            )
        if leader and p.role != LEADER:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"not the leader of {topic}-{index}")
        return p

    # -- produce ---------------------------------------------------------------------------

    async def append_records(
        self,
        acks: int,
        timeout_ms: int,
        entries: list[tuple[str, int, bytes | None]],
        *,
        produce_version: int = 11,
        internal: bool = False,
        guards: dict[TopicPartition, tuple[int, int]] | None = None,
    ) -> dict[TopicPartition, ProduceResult]:
        """Validate and append one batch per partition; with acks=-1 wait for the ISR.
        ``guards``: (producer id, token) of partitions whose batch was verified with the
        transaction coordinator (``ProducerStateManager.guard``)."""
        pending = _Pending()
        for topic, index, records in entries:
            key = (topic, index)
            try:
                p = self.partition_or_error(topic, index)
                cfg = p.log.config
                if internal:
                    batch = validate_internal_batch(records)
                else:
                    batch = await validated_batch(records, cfg.max_message_bytes, produce_version)
                    p = self.partition_or_error(topic, index)  # still ours after the wait?
                if self.faults.no_duplicate_check:
                    p.log.producers.forget(batch.header.producer_id)
                if (
                    acks == -1
                    and len(p.isr) < cfg.min_insync_replicas
                    and not self.faults.ignore_min_insync_replicas
                ):
                    if self.faults.append_refused:
                        p.log.append_as_leader(batch.data, batch.header, p.leader_epoch)
                        p.wake()
                        p.maybe_increment_high_watermark()
                    raise KafkaError(
                        ErrorCode.NOT_ENOUGH_REPLICAS,
                        f"ISR {list(p.isr)} is smaller than min.insync.replicas "
                        f"{cfg.min_insync_replicas}",
                    )
                if guards and key in guards:
                    p.log.producers.check_guard(*guards[key])
                result = p.log.append_as_leader(
                    batch.data, batch.header, p.leader_epoch, coordinator=internal
                )
            except (KafkaError, OSError) as e:
                pending.results[key] = _append_failed(key, e)
                continue
            pending.results[key] = ProduceResult(
                0,
                result.first_offset,
                result.log_start_offset,
                log_append_time=result.log_append_time,
            )
            if not result.duplicate:
                if self.faults.ack_before_replication:
                    self._held_back[key] = result.first_offset
                else:
                    p.wake()
                p.maybe_increment_high_watermark()
            pending.waits.append((key, p, result.last_offset + 1))
        if acks == -1 and pending.waits and not self.faults.ack_before_replication:
            await self._await_replication(pending, timeout_ms)
        return pending.results

    async def _await_replication(self, pending: _Pending, timeout_ms: int) -> None:
        flush = self.log_defaults.flush_on_acks_all

        async def settle(p: Partition, offset: int) -> int:
            if flush:  # fsync on the leader while the followers fetch, not after
                code, _ = await asyncio.gather(p.wait_committed(offset), p.log.flush_async(offset))
            else:
                code = await p.wait_committed(offset)
            if code == ErrorCode.NONE and len(p.maximal_isr) < p.log.config.min_insync_replicas:
                return int(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
            return int(code)

        tasks = {key: asyncio.ensure_future(settle(p, offset)) for key, p, offset in pending.waits}
        _, not_done = await asyncio.wait(tasks.values(), timeout=max(timeout_ms, 0) / 1000)
        for key, task in tasks.items():
            if task in not_done:
                task.cancel()
                code = int(ErrorCode.REQUEST_TIMED_OUT)
            elif task.exception() is not None:
                log.error("%s-%d: waiting for replication: %r", *key, task.exception())
                code = int(ErrorCode.KAFKA_STORAGE_ERROR)
            else:
                code = task.result()
            if code:
                r = pending.results[key]
                r.error, r.base_offset = code, -1

    async def append_markers(
        self, timeout_ms: int, markers: list[tuple[str, int, int, int, int, bool, int]]
    ) -> dict[TopicPartition, int]:
        """Write transaction markers ``(topic, partition, producer id, producer epoch,
        coordinator epoch, commit, transaction version)`` as the leader, acks=all as Kafka
        appends them; returns an error code per partition."""
        pending = _Pending()
        for topic, index, pid, epoch, coordinator_epoch, commit, tv in markers:
            key = (topic, index)
            try:
                p = self.partition_or_error(topic, index)
                if len(p.isr) < p.log.config.min_insync_replicas:
                    raise KafkaError(
                        ErrorCode.NOT_ENOUGH_REPLICAS,
                        f"ISR {list(p.isr)} is smaller than min.insync.replicas",
                    )
                result = p.log.append_marker(
                    pid, epoch, coordinator_epoch, commit, p.leader_epoch, tv
                )
            except (KafkaError, OSError) as e:
                pending.results[key] = _append_failed(key, e)
                continue
            pending.results[key] = ProduceResult(0, result.first_offset, result.log_start_offset)
            p.wake()
            p.maybe_increment_high_watermark()
            pending.waits.append((key, p, result.last_offset + 1))
        if pending.waits:
            await self._await_replication(pending, timeout_ms)
        return {key: r.error for key, r in pending.results.items()}

    def transaction_open(
        self, topic: str, index: int, producer_id: int, epoch: int | None = None
    ) -> bool:
        """Whether the producer has a transaction open in this partition (led here), at
        ``epoch`` when given (Kafka 4.x's hasOngoingTransaction(producerId, producerEpoch): with
        transaction version 2 the next transaction has the next epoch, and its first batch must
        reach the coordinator even while the previous one's marker is still on its way)."""
        p = self.partitions.get((topic, index))
        if p is None:
            return False
        entry = p.log.producers.producers.get(producer_id)
        return (
            entry is not None
            and entry.txn_first_offset is not None
            and (epoch is None or entry.epoch == epoch)
        )

    # -- fetch -----------------------------------------------------------------------------

    async def fetch(
        self,
        replica_id: int,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        isolation_level: int,
        requests: list[FetchPartition],
    ) -> list[FetchResult]:
        """Read every partition; long-poll until ``min_bytes`` are there or the wait is over."""
        deadline = time.monotonic() + max(max_wait_ms, 0) / 1000
        while True:
            results, total, settled = self._read_all(
                replica_id, max_bytes, isolation_level, requests
            )
            remaining = deadline - time.monotonic()
            if total >= min_bytes or settled or remaining <= 0:
                return results
            fut = asyncio.get_running_loop().create_future()
            watched = [p for r in requests if (p := self.partitions.get((r.topic, r.partition)))]
            for p in watched:
                p.watch(fut)
            try:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        await fut
            finally:
                for p in watched:
                    p.unwatch(fut)

    def _read_all(
        self, replica_id: int, max_bytes: int, isolation: int, requests: list[FetchPartition]
    ) -> tuple[list[FetchResult], int, bool]:
        results = []
        total = 0
        settled = False  # an error or a divergence: answer at once
        for r in requests:
            res = self._read_one(replica_id, isolation, r, max(max_bytes - total, 0), total == 0)
            if res.error or res.diverging is not None:
                settled = True
            total += len(res.records)
            results.append(res)
        return results, total, settled

    def _read_one(
        self, replica_id: int, isolation: int, r: FetchPartition, budget: int, min_one: bool
    ) -> FetchResult:
        try:
            p = self.partition_or_error(r.topic, r.partition)
            p.check_leader_epoch(r.current_leader_epoch)
        except KafkaError as e:
            return FetchResult(int(e.code))
        plog = p.log
        follower = replica_id >= 0
        if follower and r.last_fetched_epoch >= 0:
            epoch, end = plog.epochs.end_offset_for(r.last_fetched_epoch, plog.log_end_offset)
            if end < r.fetch_offset or epoch < r.last_fetched_epoch:
                return FetchResult(
                    0,
                    p.high_watermark,
                    p.last_stable_offset,
                    plog.log_start_offset,
                    b"",
                    (epoch, end),
                )
        if follower:
            p.record_follower_fetch(replica_id, r.fetch_offset)
            if p.join_candidates and p.pending_isr is None:
                self._isr_wakeup.set()
        if follower:
            # the fault ack_before_replication: the last batch a client sent stays the
            # leader's alone until the next one comes
            upper = self._held_back.get((r.topic, r.partition), plog.log_end_offset)
        elif isolation == READ_COMMITTED:
            upper = p.last_stable_offset
        else:
            upper = p.high_watermark
        try:
            data = plog.read(r.fetch_offset, min(r.max_bytes, budget), upper, min_one)
        except KafkaError as e:
            # as Apache Kafka answers a read that failed (OFFSET_OUT_OF_RANGE): no offsets at
            # all, -1 for the high watermark, last stable offset and log start (issue 26)
            return FetchResult(int(e.code))
        if self.faults.hide_first_batch and not follower:
            data = without_first_batch(data)
        aborted = None
        if not follower and isolation == READ_COMMITTED:
            end = _next_offset_after(data, r.fetch_offset)
            aborted = [
                (t.producer_id, t.first_offset)
                for t in plog.producers.aborted_between(r.fetch_offset, end)
            ]
        return FetchResult(
            0, p.high_watermark, p.last_stable_offset, plog.log_start_offset, data, None, aborted
        )

    def read(
        self, topic: str, index: int, offset: int, max_bytes: int, committed: bool = True
    ) -> bytes:
        """Stored batches of a partition led here (for the group coordinator's replay)."""
        p = self.partition_or_error(topic, index)
        upper = p.high_watermark if committed else p.log.log_end_offset
        return p.log.read(offset, max_bytes, upper, True)

    # -- list offsets ----------------------------------------------------------------------

    def list_offset(
        self,
        replica_id: int,
        isolation: int,
        topic: str,
        index: int,
        current_leader_epoch: int,
        timestamp: int,
    ) -> OffsetAnswer:
        try:
            p = self.partition_or_error(topic, index, leader=replica_id != -2)
            p.check_leader_epoch(current_leader_epoch)
        except KafkaError as e:
            return OffsetAnswer(int(e.code))
        plog = p.log
        if replica_id >= 0:
            upper = plog.log_end_offset
        elif isolation == READ_COMMITTED:
            upper = p.last_stable_offset
        else:
            upper = p.high_watermark
        if timestamp in (EARLIEST, EARLIEST_LOCAL):
            start = plog.log_start_offset
            return OffsetAnswer(0, -1, start, plog.epochs.epoch_at(start))
        if timestamp == LATEST:
            return OffsetAnswer(0, -1, upper, plog.latest_epoch())
        if timestamp in TIERED_ONLY:
            return OffsetAnswer(0, -1, -1, -1)
        if timestamp == MAX_TIMESTAMP:
            found = plog.offset_of_max_timestamp()
        else:
            found = plog.offset_for_timestamp(timestamp)
        if found is None or found.offset >= upper:
            return OffsetAnswer(0, -1, -1, -1)
        return OffsetAnswer(0, found.timestamp, found.offset, plog.epochs.epoch_at(found.offset))

    # -- delete records --------------------------------------------------------------------

    def delete_records(self, topic: str, index: int, offset: int) -> int:
        """Move the leader's log start offset to ``offset`` (-1: the high watermark); returns
        the new log start offset (the low watermark). Raises KafkaError."""
        p = self.partition_or_error(topic, index)
        if not p.log.config.delete_retention:
            raise KafkaError(
                ErrorCode.POLICY_VIOLATION, f"{topic}-{index}: cleanup.policy has no delete"
            )
        target = p.high_watermark if offset == DELETE_TO_HIGH_WATERMARK else offset
        if target < 0 or target > p.high_watermark:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"{topic}-{index}: offset {offset} is outside [0, {p.high_watermark}]",
            )
        return p.log.advance_start(target)

    # -- ISR upkeep ------------------------------------------------------------------------

    async def _isr_loop(self) -> None:
        lag = self.replication.replica_lag_time_max_ms
        interval = max(lag / 2, 50) / 1000
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval):
                    await self._isr_wakeup.wait()
            self._isr_wakeup.clear()
            proposals = []
            for p in list(self.partitions.values()):
                if p.role != LEADER or p.pending_isr is not None:
                    continue
                out = set(p.out_of_sync(lag))
                join = p.join_candidates & set(p.ready_to_join())
                if self.faults.never_expand_isr:
                    join = set()
                p.join_candidates = set()
                if not out and not join:
                    continue
                isr = tuple(sorted((set(p.isr) - out) | join))
                if self.node_id not in isr:
                    isr = tuple(sorted({*isr, self.node_id}))
                if isr == p.isr:
                    continue
                p.propose_isr(isr)
                proposals.append(p)
            if proposals:
                await self._alter_partition(proposals)

    async def _alter_partition(self, proposals: list[Partition]) -> None:
        channel = getattr(self.node, "controller_channel", None)
        if channel is None:
            for p in proposals:
                p.isr_refused()
            return
        topics: dict[str, dict[str, Any]] = {}
        for p in proposals:
            t = topics.setdefault(
                p.topic, {"TopicName": p.topic, "TopicId": p.topic_id, "Partitions": []}
            )
            t["Partitions"].append(
                {
                    "PartitionIndex": p.index,
                    "LeaderEpoch": p.leader_epoch,
                    "NewIsr": list(p.pending_isr or ()),
                    "NewIsrWithEpochs": [
                        {"BrokerId": b, "BrokerEpoch": -1} for b in p.pending_isr or ()
                    ],
                    "LeaderRecoveryState": 0,
                    "PartitionEpoch": p.partition_epoch,
                }
            )
        body = {
            "BrokerId": self.node_id,
            "BrokerEpoch": getattr(self.node, "broker_epoch", -1),
            "Topics": list(topics.values()),
        }
        try:
            resp = await channel.request(ApiKey.ALTER_PARTITION, body, timeout=10)
        except (TimeoutError, ConnectionError, OSError) as e:
            log.warning("AlterPartition failed: %r", e)
            for p in proposals:
                p.isr_refused()
            return
        by_key = {p.key: p for p in proposals}
        if resp.body.get("ErrorCode"):
            log.info("AlterPartition refused: error %d", resp.body["ErrorCode"])
            for p in proposals:
                p.isr_refused()
            return
        ids = {p.topic_id: p.topic for p in proposals}
        answered = set()
        for t in resp.body["Topics"]:
            name = t.get("TopicName") or ids.get(t.get("TopicId"))
            if name is None:  # an id none of the proposals named: nothing of it was proposed
                continue
            for r in t["Partitions"]:
                found = by_key.get((name, r["PartitionIndex"]))
                if found is None:
                    continue
                answered.add(found.key)
                if r["ErrorCode"]:
                    log.info("%r: AlterPartition error %d", found, r["ErrorCode"])
                    found.isr_refused()
                else:
                    found.isr_committed(tuple(r["Isr"]), r["LeaderEpoch"], r["PartitionEpoch"])
        for key, p in by_key.items():
            if key not in answered:
                p.isr_refused()

    # -- background upkeep -----------------------------------------------------------------

    async def _checkpoint_loop(self) -> None:
        interval = self.replication.replica_high_watermark_checkpoint_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            self._write_checkpoint()

    def _write_checkpoint(self) -> None:
        for key, p in self.partitions.items():
            self._hw_checkpoint[key] = p.high_watermark
        _write_checkpoint(self.logs_dir / HW_CHECKPOINT, self._hw_checkpoint)

    async def _flush_loop(self) -> None:
        interval = self.replication.log_flush_scheduler_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            for p in list(self.partitions.values()):
                if p.log.needs_flush():
                    await p.log.flush_async()

    async def _retention_loop(self) -> None:
        interval = self.replication.log_retention_check_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            self.apply_retention()

    def apply_retention(self) -> int:
        deleted = 0
        for p in list(self.partitions.values()):
            if p.role in (LEADER, FOLLOWER):
                deleted += p.log.apply_retention(p.high_watermark)
        return deleted


#: client batches at least this large, or compressed, are validated on a worker thread
OFFLOAD_BYTES = 64 * 1024
#: where a v2 batch's attributes end (their low 3 bits name the compression codec)
_ATTRIBUTES_END = 23


async def validated_batch(
    records: bytes | None, max_message_bytes: int, produce_version: int
) -> Any:
    """``validate_batch``, off the event loop when it may be long (a big or compressed batch:
    decompression and the walk over every record), so that one heavy Produce does not stall
    every other connection of the broker; small plain batches stay inline (cheaper)."""
    check = functools.partial(
        validate_batch,
        records,
        max_message_bytes=max_message_bytes,
        produce_version=produce_version,
    )
    heavy = records is not None and (
        len(records) >= OFFLOAD_BYTES
        or (len(records) >= _ATTRIBUTES_END and records[_ATTRIBUTES_END - 1] & 0x07)
    )
    return await asyncio.to_thread(check) if heavy else check()


if TYPE_CHECKING:  # mypy checks here that the manager is what handlers take it for
    _view: type[ReplicaView] = ReplicaManager


def _append_failed(key: TopicPartition, e: KafkaError | OSError) -> ProduceResult:
    """A refused append's answer: Kafka's code, or KAFKA_STORAGE_ERROR for a failed write."""
    if isinstance(e, KafkaError):
        return ProduceResult(int(e.code), message=e.message or None)
    log.error("%s-%d: append failed: %s", *key, e)
    return ProduceResult(int(ErrorCode.KAFKA_STORAGE_ERROR))


def _next_offset_after(data: bytes, default: int) -> int:
    """The offset after the last batch in ``data`` (``default`` when it holds none)."""
    pos, end = 0, default
    while pos + HEADER_SIZE <= len(data):
        h = parse_header(data, pos)
        if h.length < HEADER_SIZE:
            break
        end = h.next_offset
        pos += h.length
    return end


# -- files -------------------------------------------------------------------------------------


def _parse_dir(d: Path) -> TopicPartition | None:
    if not d.is_dir():
        return None
    topic, sep, index = d.name.rpartition("-")
    if not sep or not topic or not index.isdigit():
        return None
    return topic, int(index)


def _read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    out: dict[TopicPartition, int] = {}
    try:
        lines = path.read_text().split("\n")
        for line in lines[2 : 2 + int(lines[1])]:
            topic, index, offset = line.rsplit(" ", 2)
            out[(topic, int(index))] = int(offset)
    except (OSError, ValueError, IndexError):
        return {}
    return out


def _write_checkpoint(path: Path, entries: dict[TopicPartition, int]) -> None:
    lines = ["0", str(len(entries))] + [f"{t} {i} {o}" for (t, i), o in sorted(entries.items())]
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _read_topic_id(directory: Path) -> uuid.UUID | None:
    try:
        for line in (directory / TOPIC_ID_FILE).read_text().splitlines():
            if line.startswith("topic_id:"):
                return uuid.UUID(line.split(":", 1)[1].strip())
    except (OSError, ValueError):
        return None
    return None


def _write_topic_id(directory: Path, topic_id: uuid.UUID) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / TOPIC_ID_FILE).write_text(f"version: 0\ntopic_id: {topic_id}\n")
