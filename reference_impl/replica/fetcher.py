"""A follower's fetcher: one connection per leader broker, Fetch with our replica id, in a loop.

Every request names each followed partition with its fetch offset (our log end) and
LastFetchedEpoch (the latest epoch in our leader-epoch cache). The leader answers either
records, which are appended as they are and fsynced (under the default flush policy) before
the next request reports them as ours, or a DivergingEpoch: our log holds records the
leader's never had. We then truncate to the end of that epoch as the leader knows it (or our
own end of it, when smaller) and fetch again; repeating this converges on the last offset
both logs agree on (Kafka's KIP-595 truncation through Fetch v12+, instead of a separate
OffsetsForLeaderEpoch round trip). An offset the leader no longer has or never had (out of
range) is resolved with ListOffsets: truncate down to the leader's log end, or start over at
its log start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine
from typing import Any, Protocol

from conformance.client.wire import Connection, pick_version
from conformance.protocol import ApiKey, ErrorCode, KafkaError
from reference_impl import security_hooks
from reference_impl.log.epochs import UNDEFINED_EPOCH
from reference_impl.replica.config import ReplicationConfig
from reference_impl.replica.partition import FOLLOWER, Partition
from reference_impl.tasks import CLOSE_TIMEOUT_S, stop_tasks

log = logging.getLogger(__name__)


class FetcherHost(Protocol):
    """What a fetcher uses of the replica manager that runs it (``manager.ReplicaManager``)."""

    node_id: int
    codec: Any
    replication: ReplicationConfig

    @property
    def flush_replicated(self) -> bool: ...

    def endpoint_of(self, broker_id: int) -> tuple[str, int] | None: ...

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task: ...


LATEST, EARLIEST = -1, -2
_RETRY = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.KAFKA_STORAGE_ERROR,
    }
)


class ReplicaFetcher:
    def __init__(self, manager: FetcherHost, leader_id: int) -> None:
        self.manager = manager
        self.leader_id = leader_id
        self.partitions: dict[tuple[str, int], Partition] = {}
        #: partitions paused after an error, until this monotonic time
        self.delayed: dict[tuple[str, int], float] = {}
        self.conn: Connection | None = None
        self.version = 12
        self._changed = asyncio.Event()
        self._task: asyncio.Task | None = None
        self.stopped = False

    def start(self) -> None:
        self._task = self.manager.spawn(self.run(), f"replica-fetcher-{self.leader_id}")

    def add(self, p: Partition) -> None:
        self.partitions[p.key] = p
        self.delayed.pop(p.key, None)
        self._changed.set()

    def remove(self, key: tuple[str, int]) -> None:
        self.partitions.pop(key, None)
        self.delayed.pop(key, None)
        self._changed.set()

    async def stop(self) -> None:
        self.stopped = True
        self._changed.set()
        if self._task is not None:
            await stop_tasks([self._task], CLOSE_TIMEOUT_S)
        await self._disconnect()

    # -- the loop --------------------------------------------------------------------------

    async def run(self) -> None:
        cfg = self.manager.replication
        backoff = cfg.replica_fetch_backoff_ms / 1000
        while not self.stopped:
            ready = self._ready()
            if not ready:
                self._changed.clear()
                wait = self._next_retry()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self._changed.wait()
                continue
            try:
                conn = await self._connect()
                body = self._request(ready)
                resp = await conn.request(
                    ApiKey.FETCH,
                    self.version,
                    body,
                    timeout=cfg.replica_fetch_wait_max_ms / 1000 + 30,
                )
                await self._handle(ready, resp.body)
            except (ConnectionError, OSError, TimeoutError) as e:
                log.info("fetch from broker %d failed: %r", self.leader_id, e)
                await self._disconnect()
                await asyncio.sleep(backoff)

    def _ready(self) -> list[Partition]:
        t = time.monotonic()
        for key, until in list(self.delayed.items()):
            if until <= t:
                del self.delayed[key]
        return [
            p
            for key, p in self.partitions.items()
            if key not in self.delayed and p.role == FOLLOWER and p.leader_id == self.leader_id
        ]

    def _next_retry(self) -> float | None:
        if not self.delayed:
            return None
        return max(0.0, min(self.delayed.values()) - time.monotonic())

    def _delay(self, p: Partition) -> None:
        self.delayed[p.key] = (
            time.monotonic() + self.manager.replication.replica_fetch_backoff_ms / 1000
        )

    async def _connect(self) -> Connection:
        if self.conn is not None and not self.conn.closed:
            return self.conn
        endpoint = self.manager.endpoint_of(self.leader_id)
        if endpoint is None:
            raise ConnectionError(f"no endpoint known for broker {self.leader_id}")
        conn = await security_hooks.connect(
            endpoint[0],
            endpoint[1],
            codec=self.manager.codec,
            client_id=f"replica-fetcher-{self.manager.node_id}",
            timeout=5.0,
        )
        try:
            versions = await conn.api_versions()
        except BaseException:
            await conn.close()
            raise
        top = pick_version(versions, self.manager.codec, ApiKey.FETCH)
        if top is None:
            await conn.close()
            raise ConnectionError(f"broker {self.leader_id} does not serve Fetch")
        self.version = min(top, self.manager.replication.replica_fetch_version)
        self.list_offsets_version = pick_version(versions, self.manager.codec, ApiKey.LIST_OFFSETS)
        self.conn = conn
        return conn

    async def _disconnect(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()

    def _request(self, ready: list[Partition]) -> dict[str, Any]:
        cfg = self.manager.replication
        ids = self._topic_ids()
        topics: dict[str, list[dict[str, Any]]] = {}
        for p in ready:
            topics.setdefault(p.topic, []).append(
                {
                    "Partition": p.index,
                    "CurrentLeaderEpoch": p.leader_epoch,
                    "FetchOffset": p.log.log_end_offset,
                    "LastFetchedEpoch": p.log.latest_epoch(),
                    "LogStartOffset": p.log.log_start_offset,
                    "PartitionMaxBytes": cfg.replica_fetch_max_bytes,
                }
            )
        return {
            "ReplicaId": self.manager.node_id,
            "ReplicaState": {"ReplicaId": self.manager.node_id, "ReplicaEpoch": -1},
            "MaxWaitMs": cfg.replica_fetch_wait_max_ms,
            "MinBytes": cfg.replica_fetch_min_bytes,
            "MaxBytes": cfg.replica_fetch_response_max_bytes,
            "IsolationLevel": 0,
            "SessionId": 0,
            "SessionEpoch": -1,
            "Topics": [
                {"Topic": t, "TopicId": ids.get(t), "Partitions": parts}
                for t, parts in topics.items()
            ],
            "ForgottenTopicsData": [],
            "RackId": "",
        }

    def _topic_ids(self) -> dict[str, Any]:
        """Each topic's id, as its first partition here has it (one pass: a scan per topic of
        every partition made each fetch quadratic in the partitions a broker follows)."""
        ids: dict[str, Any] = {}
        for p in self.partitions.values():
            ids.setdefault(p.topic, p.topic_id)
        return ids

    async def _handle(self, asked: list[Partition], body: dict[str, Any]) -> None:
        by_key = {p.key: (p, p.leader_epoch) for p in asked}
        names = {p.topic_id: p.topic for p in asked}
        flush: list[Partition] = []
        if body.get("ErrorCode", 0):
            for p in asked:
                self._delay(p)
            return
        for topic in body["Responses"]:
            name = topic.get("Topic") or names.get(topic.get("TopicId"))
            if name is None:  # an id this fetch did not name: none of its partitions is asked
                continue
            for r in topic["Partitions"]:
                entry = by_key.get((name, r["PartitionIndex"]))
                if entry is None:
                    continue
                p, epoch_asked = entry
                # the partition may have changed role or epoch while the fetch was in flight
                if (
                    p.role != FOLLOWER
                    or p.leader_epoch != epoch_asked
                    or p.key not in self.partitions
                ):
                    continue
                try:
                    if await self._apply(p, r):
                        flush.append(p)
                except KafkaError as e:
                    log.warning("%r: %s", p, e)
                    self._delay(p)
        if self.manager.flush_replicated:
            await asyncio.gather(*(p.log.flush_async() for p in flush))

    async def _apply(self, p: Partition, r: dict[str, Any]) -> bool:
        """Apply one partition's answer; True when records were appended."""
        code = r["ErrorCode"]
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            await self._out_of_range(p)
            return False
        if code:
            if code not in _RETRY:
                log.warning("%r: fetch error %d", p, code)
            self._delay(p)
            return False
        diverging = r.get("DivergingEpoch") or {}
        if diverging.get("EndOffset", -1) >= 0 or diverging.get("Epoch", -1) >= 0:
            self._truncate_diverging(p, diverging["Epoch"], diverging["EndOffset"])
            return False
        records = r["Records"]
        appended = 0
        if records:
            appended = p.log.append_as_follower(records)
        p.high_watermark = max(p.high_watermark, min(r["HighWatermark"], p.log.log_end_offset))
        leader_start = r.get("LogStartOffset", -1)
        if leader_start > p.log.log_end_offset:
            p.log.truncate_fully_and_start_at(leader_start)
        elif leader_start > p.log.log_start_offset:
            p.log.advance_start(leader_start)  # the leader deleted records (DeleteRecords)
        if appended:
            p.wake()
        return appended > 0

    def _truncate_diverging(self, p: Partition, epoch: int, end_offset: int) -> None:
        """Cut our log where it stops agreeing with the leader's (as Kafka's fetcher does)."""
        leo = p.log.log_end_offset
        ours_epoch, ours_end = (
            p.log.epochs.end_offset_for(epoch, leo) if epoch >= 0 else (UNDEFINED_EPOCH, -1)
        )
        if end_offset < 0 or ours_end < 0:
            target = p.high_watermark  # nothing to compare: keep only what was committed
        elif ours_epoch != epoch:
            target = ours_end  # we never had the leader's epoch: cut to our end of the older one
        else:
            target = min(end_offset, ours_end)
        target = min(target, leo)
        log.info(
            "%r: diverged at epoch %d (leader end %d), truncating to %d",
            p,
            epoch,
            end_offset,
            target,
        )
        p.log.truncate_to(target)
        p.high_watermark = min(p.high_watermark, p.log.log_end_offset)

    async def _out_of_range(self, p: Partition) -> None:
        leader_end = await self._leader_offset(p, LATEST)
        if leader_end is None:
            self._delay(p)
            return
        if p.log.log_end_offset > leader_end:
            log.info("%r: ahead of the leader's end %d, truncating", p, leader_end)
            p.log.truncate_to(leader_end)
            p.high_watermark = min(p.high_watermark, p.log.log_end_offset)
            return
        leader_start = await self._leader_offset(p, EARLIEST)
        if leader_start is not None and p.log.log_end_offset < leader_start:
            log.info("%r: behind the leader's start %d, starting over", p, leader_start)
            p.log.truncate_fully_and_start_at(leader_start)
            p.high_watermark = leader_start
        else:
            self._delay(p)

    async def _leader_offset(self, p: Partition, timestamp: int) -> int | None:
        conn = await self._connect()
        v = self.list_offsets_version
        if v is None:
            return None
        body = {
            "ReplicaId": self.manager.node_id,
            "IsolationLevel": 0,
            "Topics": [
                {
                    "Name": p.topic,
                    "Partitions": [
                        {
                            "PartitionIndex": p.index,
                            "CurrentLeaderEpoch": p.leader_epoch,
                            "Timestamp": timestamp,
                        }
                    ],
                }
            ],
        }
        resp = await conn.request(ApiKey.LIST_OFFSETS, v, body, timeout=30)
        part = resp.body["Topics"][0]["Partitions"][0]
        return part["Offset"] if part["ErrorCode"] == 0 else None
