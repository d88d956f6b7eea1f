"""The transaction coordinator on a broker: ``__transaction_state``, leadership, markers, time.

``TxnService`` connects the broker-free ``TxnCoordinator`` to its broker:

* records go to ``__transaction_state`` through ``ReplicaManager.append_records(acks=-1,
  internal=True)`` (one RecordBatch v2 per record, Kafka's key/value layout, ``txn/records.py``);
* when this broker becomes leader of a ``__transaction_state`` partition (the replica manager's
  leadership listener) the coordinator replays it up to its log end (its leader epoch is the
  coordinator epoch the markers carry) and resends the markers of transactions left in
  PrepareCommit/PrepareAbort; when it stops leading one, those transactional ids are unloaded;
* markers are real WriteTxnMarkers requests (at most v1, Kafka 3.9's) to each partition's leader
  on the inter-broker listener, authenticated as the broker principal (``security_hooks.connect``);
* FindCoordinator (key type 1) names the leader of ``abs(javaHash(id)) % state_partitions``,
  creating the topic through the controller while it is absent, as groups do
  ``__consumer_offsets``;
* a task aborts transactions past their timeout every ``abort_interval_ms`` (started when the
  broker first leads a ``__transaction_state`` partition).

Settings: ``settings["transactions"]`` with ``TxnConfig`` field names (``state_partitions``,
``state_replication_factor``, ``max_timeout_ms``, ``abort_interval_ms`` …).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import fields
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.internal_topics import TRANSACTION_STATE_TOPIC
from reference_impl.data_plane import HostedPartition, ReplicaView
from reference_impl.groups.placement import partition_for
from reference_impl.groups.service import ClusterPlacement, Coordinator
from reference_impl.groups.store import decode_records, encode_records
from reference_impl.peers import PeerConnections
from reference_impl.roles import BrokerView
from reference_impl.txn.coordinator import (
    Marker,
    TopicPartition,
    TxnConfig,
    TxnCoordinator,
    TxnPartition,
    wall_ms,
)
from reference_impl.txn.producer_ids import ProducerIdAllocator

log = logging.getLogger(__name__)

#: how long an append to __transaction_state may wait for the ISR
APPEND_TIMEOUT_MS = 5000
LOAD_CHUNK_BYTES = 1 << 20
#: WriteTxnMarkers: Kafka 3.9's highest version
MARKERS_MAX_VERSION = 1
RETRIABLE = int(ErrorCode.REQUEST_TIMED_OUT)
#: how long a leader that does not advertise WriteTxnMarkers is not asked again
UNSERVED_RECHECK_S = 5.0


def txn_config(settings: dict[str, Any] | None) -> TxnConfig:
    known = {f.name for f in fields(TxnConfig)}
    unknown = sorted(set(settings or {}) - known)
    if unknown:
        log.warning("unknown transactions settings ignored: %s", ", ".join(unknown))
    return TxnConfig(**{k: v for k, v in (settings or {}).items() if k in known})


class ReplicaTxnStore:
    """Appends one record per batch through the replica manager with acks=all."""

    def __init__(self, replica_manager: ReplicaView) -> None:
        self.replica_manager = replica_manager

    async def append(self, partition: int, key: bytes, value: bytes | None) -> int:
        data = encode_records([(key, value)], wall_ms())
        results = await self.replica_manager.append_records(
            -1, APPEND_TIMEOUT_MS, [(TRANSACTION_STATE_TOPIC, partition, data)], internal=True
        )
        return int(results[(TRANSACTION_STATE_TOPIC, partition)].error)


class BrokerMarkers:
    """WriteTxnMarkers to the partitions' leaders, one connection per leader broker."""

    def __init__(self, node: BrokerView) -> None:
        self.node = node
        self.peers = PeerConnections(
            node,
            ApiKey.WRITE_TXN_MARKERS,
            f"txn-markers-{node.node_id}",
            max_version=MARKERS_MAX_VERSION,
        )
        #: leaders that did not advertise WriteTxnMarkers -> when to ask them again
        self._unserved: dict[int, float] = {}

    async def write(self, marker: Marker) -> dict[TopicPartition, int]:
        cache = self.node.metadata_cache
        results: dict[TopicPartition, int] = {}
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in marker.partitions:
            info = cache.partition(*tp)
            if info is None:
                log.info("%s-%d no longer exists: it needs no marker", *tp)
                results[tp] = 0
            elif info.leader < 0 or not cache.alive(info.leader):
                results[tp] = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            else:
                by_leader.setdefault(info.leader, []).append(tp)
        answers = await asyncio.gather(
            *(self._send(leader, marker, tps) for leader, tps in by_leader.items())
        )
        for answer in answers:
            results.update(answer)
        return results

    async def _send(
        self, leader: int, marker: Marker, tps: list[TopicPartition]
    ) -> dict[TopicPartition, int]:
        failed = dict.fromkeys(tps, RETRIABLE)
        topics: dict[str, list[int]] = {}
        for topic, index in sorted(tps):
            topics.setdefault(topic, []).append(index)
        body = {
            "Markers": [
                {
                    "ProducerId": marker.producer_id,
                    "ProducerEpoch": marker.producer_epoch,
                    "TransactionResult": marker.commit,
                    "Topics": [{"Name": t, "PartitionIndexes": ps} for t, ps in topics.items()],
                    "CoordinatorEpoch": marker.coordinator_epoch,
                }
            ]
        }
        if self._unserved.get(leader, 0.0) > time.monotonic():
            return failed
        try:
            conn, version = await self.peers.get(leader)
            if version is None:
                if leader not in self._unserved:
                    log.warning("broker %d does not serve WriteTxnMarkers: markers wait", leader)
                self._unserved[leader] = time.monotonic() + UNSERVED_RECHECK_S
                return failed
            self._unserved.pop(leader, None)
            timeout = self.node.config.request_timeout_ms / 1000
            resp = await conn.request(ApiKey.WRITE_TXN_MARKERS, version, body, timeout=timeout)
        except (ConnectionError, OSError, TimeoutError) as e:
            log.info("WriteTxnMarkers to broker %d failed: %r", leader, e)
            await self.peers.drop(leader)
            return failed
        out = dict(failed)
        for m in resp.body["Markers"]:
            if m["ProducerId"] != marker.producer_id:
                continue
            for t in m["Topics"]:
                for p in t["Partitions"]:
                    if (t["Name"], p["PartitionIndex"]) in out:
                        out[(t["Name"], p["PartitionIndex"])] = p["ErrorCode"]
        bad = {tp: e for tp, e in out.items() if e}
        if bad:
            log.info("WriteTxnMarkers to broker %d: %s", leader, bad)
        return out


class TxnPlacement(ClusterPlacement):
    """``__transaction_state``: Kafka's transaction.state.log.* shape (min ISR 2 when it can)."""

    topic = TRANSACTION_STATE_TOPIC

    def __init__(self, node: BrokerView, config: TxnConfig) -> None:
        super().__init__(node, None)
        self.config = config

    def shape(self, live_brokers: int) -> tuple[int, int, dict[str, str]]:
        rf = max(1, min(self.config.state_replication_factor, live_brokers))
        configs = {
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",
            "min.insync.replicas": str(min(2, rf)),
        }
        return self.config.state_partitions, rf, configs


class TxnService:
    """The transaction coordinator wired to a broker node."""

    def __init__(self, node: BrokerView) -> None:
        settings = (getattr(node.config, "settings", None) or {}).get("transactions")
        self.config = txn_config(settings)
        self.node = node
        self.allocator = ProducerIdAllocator(node.node_id, node.data_dir)
        self.replica_manager = node.replica_manager
        count = self.config.state_partitions
        self.coordinator = TxnCoordinator(
            self.config,
            ReplicaTxnStore(self.replica_manager),
            BrokerMarkers(node),
            self.allocator.allocate,
            spawn=node.spawn,
            partition_for=lambda tid: partition_for(tid, count),
        )
        self.placement = TxnPlacement(node, self.config)
        #: __transaction_state partition -> leader epoch loaded
        self._led: dict[int, int] = {}
        if hasattr(self.replica_manager, "add_leadership_listener"):
            self.replica_manager.add_leadership_listener(self._leadership_changed)
        #: the timeout task, started when this broker first leads a __transaction_state partition
        self._sweeper: asyncio.Task | None = None

    # -- FindCoordinator ---------------------------------------------------------------------

    async def find(self, transactional_id: str, listener: str) -> Coordinator:
        return await self.placement.locate(
            self.coordinator.partition_for(transactional_id), listener
        )

    # -- leadership ---------------------------------------------------------------------------

    def _leadership_changed(self, partition: HostedPartition) -> None:
        if partition.topic != TRANSACTION_STATE_TOPIC:
            return
        index = partition.index
        if getattr(partition, "role", None) == "leader":
            if self._led.get(index) == partition.leader_epoch:
                return
            self._led[index] = partition.leader_epoch
            if self._sweeper is None:
                self._sweeper = self.node.spawn(self._abort_timed_out(), "txn-timeouts")
            part = self.coordinator.start_loading(index, partition.leader_epoch)
            log.info(
                "leading %s-%d (epoch %d): loading",
                TRANSACTION_STATE_TOPIC,
                index,
                partition.leader_epoch,
            )
            self.node.spawn(self._load(part), f"txn-load-{index}")
        elif index in self._led:
            log.info("no longer leading %s-%d: unloaded", TRANSACTION_STATE_TOPIC, index)
            del self._led[index]
            self.coordinator.unload(index)

    async def _load(self, part: TxnPartition) -> None:
        records: list[tuple[bytes, bytes | None]] = []
        try:
            p = self.replica_manager.partition_or_error(TRANSACTION_STATE_TOPIC, part.index)
            offset, end = p.log.log_start_offset, p.log.log_end_offset
            for _ in range(end - offset + 1):
                if offset >= end:
                    break
                data = self.replica_manager.read(
                    TRANSACTION_STATE_TOPIC, part.index, offset, LOAD_CHUNK_BYTES, committed=False
                )
                chunk, next_offset = decode_records(data)
                if next_offset <= offset:
                    break
                records.extend((key, value) for _, key, value in chunk)
                offset = next_offset
                await asyncio.sleep(0)
        except Exception as e:
            log.warning("loading %s-%d stopped: %r", TRANSACTION_STATE_TOPIC, part.index, e)
            if self._led.get(part.index) is None:
                return
        if self.coordinator.finish_loading(part, records):
            log.info(
                "%s-%d loaded: %d records, %d transactional ids",
                TRANSACTION_STATE_TOPIC,
                part.index,
                len(records),
                len(part.txns),
            )

    # -- timeouts -----------------------------------------------------------------------------

    async def _abort_timed_out(self) -> None:
        """Runs for the broker's life (its tasks are cancelled at stop)."""
        interval = max(10, self.config.abort_interval_ms) / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await self.coordinator.abort_timed_out()
            except Exception:
                log.exception("aborting timed-out transactions failed")


def service_for(node: BrokerView) -> TxnService:
    """The node's TxnService, created (and attached as ``node.transactions``) on first use."""
    service = getattr(node, "transactions", None)
    if service is None:
        service = TxnService(node)
        node.transactions = service
    return service
