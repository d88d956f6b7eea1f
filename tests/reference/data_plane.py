"""In-process brokers for the data-plane tests: real replica managers, handlers and listeners,
with a toy controller that assigns partitions, grants AlterPartition and elects leaders.

Each broker is a ``Broker`` (the attributes of a broker node the data plane uses); the
controller pushes LeaderAndIsr states to the brokers directly instead of over the wire.
``crash`` drops a broker as kill -9 would (nothing flushed, closed, checkpointed); ``restart``
opens its data dir again.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from conformance.client.wire import Connection
from conformance.protocol import ApiKey, Codec
from reference_impl.broker.metadata_cache import (
    BrokerInfo,
    Endpoint,
    MetadataCache,
    PartitionInfo,
    TopicInfo,
)
from reference_impl.data_plane import PartitionState
from reference_impl.handlers import delete_records, fetch, init_producer_id, list_offsets, produce
from reference_impl.net.listener import Listener
from reference_impl.replica.manager import ReplicaManager

CODEC = Codec.from_specs()


@dataclass
class _Response:
    body: dict


@dataclass
class TopicState:
    name: str
    topic_id: uuid.UUID
    #: partition -> [replicas, isr, leader, leader_epoch, partition_epoch]
    partitions: dict[int, list[Any]] = field(default_factory=dict)


class Broker:
    """What the data plane reads of a broker node, plus its client listener."""

    def __init__(self, cluster: MiniCluster, node_id: int, data_dir: Path) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.data_dir = data_dir
        self.codec = CODEC
        self.config = SimpleNamespace(
            settings=cluster.settings,
            inter_broker_listener=None,
            listeners=[SimpleNamespace(name="PLAINTEXT")],
        )
        self.metadata_cache = cluster.cache
        self.controller_channel = cluster
        self.broker_epoch = 1
        self.replica_manager = ReplicaManager(self)
        self.listener: Listener | None = None
        self.port = 0
        self._tasks: set[asyncio.Task] = set()

    def authorize(self, session: Any, operation: str, resource: Any) -> bool:
        return True

    def spawn(self, coro: Any, name: str) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.cluster.failures.append((self.node_id, task.get_name(), task.exception()))

    async def start(self) -> None:
        await self.replica_manager.startup()
        apis = [
            m.api(self) for m in (produce, fetch, list_offsets, init_producer_id, delete_records)
        ]
        self.listener = Listener("PLAINTEXT", "zkBroker", CODEC, apis, port=self.port)
        self.port = await self.listener.start()


class MiniCluster:
    def __init__(self, root: Path, brokers: int = 3, settings: dict | None = None) -> None:
        self.root = root
        self.settings = settings or {}
        self.cache = MetadataCache()
        self.topics: dict[str, TopicState] = {}
        self.brokers: dict[int, Broker] = {}
        self.failures: list[tuple[int, str, BaseException]] = []
        self.down: set[int] = set()
        #: AlterPartition requests are refused while False
        self.grant_isr_changes = True
        self.ids = list(range(1, brokers + 1))

    async def start(self) -> MiniCluster:
        for b in self.ids:
            broker = self.brokers[b] = Broker(self, b, self.root / f"broker-{b}")
            await broker.start()
        self._publish_brokers()
        return self

    def _publish_brokers(self) -> None:
        self.cache.brokers = {
            b: BrokerInfo(b, {"PLAINTEXT": Endpoint("127.0.0.1", broker.port, 0)}, None, 0)
            for b, broker in self.brokers.items()
            if b not in self.down
        }

    async def stop(self) -> None:
        for b, broker in self.brokers.items():
            if b not in self.down:
                await broker.listener.stop()
                await broker.replica_manager.shutdown()

    # -- a toy controller ----------------------------------------------------------------------

    async def create_topic(
        self, name: str, partitions: int = 1, replicas: list[int] | None = None
    ) -> None:
        replicas = replicas or self.ids
        t = self.topics[name] = TopicState(name, uuid.uuid4())
        for i in range(partitions):
            order = replicas[i % len(replicas) :] + replicas[: i % len(replicas)]
            t.partitions[i] = [order, list(order), order[0], 0, 0]
        await self.propagate(name)

    async def propagate(self, name: str) -> None:
        t = self.topics[name]
        self.cache.topics[name] = TopicInfo(
            name,
            t.topic_id,
            {
                i: PartitionInfo(leader, le, tuple(isr), tuple(reps), (), pe)
                for i, (reps, isr, leader, le, pe) in t.partitions.items()
            },
        )
        self.cache.topic_ids = {x.topic_id: n for n, x in self.topics.items()}
        for i, (reps, isr, leader, le, pe) in t.partitions.items():
            st = PartitionState(name, t.topic_id, i, 1, leader, le, tuple(isr), pe, tuple(reps))
            for b in reps:
                if b not in self.down:
                    await self.brokers[b].replica_manager.apply_leader_and_isr([st])

    async def elect(self, name: str, index: int, leader: int) -> None:
        """Move leadership (a new leader epoch), as the controller does when a leader dies."""
        p = self.topics[name].partitions[index]
        p[2], p[3], p[4] = leader, p[3] + 1, p[4] + 1
        p[1] = [b for b in p[1] if b not in self.down]  # dead brokers leave the ISR
        if leader not in p[1]:
            p[1] = [*p[1], leader]
        await self.propagate(name)

    async def set_isr(self, name: str, index: int, isr: list[int]) -> None:
        p = self.topics[name].partitions[index]
        p[1], p[4] = list(isr), p[4] + 1
        await self.propagate(name)

    async def request(self, api_key: int, body: dict, *, timeout: float = 30.0) -> _Response:
        """The controller channel: AlterPartition only."""
        assert api_key == ApiKey.ALTER_PARTITION
        out_topics = []
        changed = set()
        for t in body["Topics"]:
            name = t["TopicName"] or self.cache.topic_ids.get(t["TopicId"])
            parts = []
            for d in t["Partitions"]:
                p = self.topics[name].partitions[d["PartitionIndex"]]
                ok = (
                    self.grant_isr_changes
                    and d["LeaderEpoch"] == p[3]
                    and d["PartitionEpoch"] == p[4]
                    and body["BrokerId"] == p[2]
                    and not set(d["NewIsr"]) & self.down  # INELIGIBLE_REPLICA in the real one
                )
                if ok:
                    p[1], p[4] = list(d["NewIsr"]), p[4] + 1
                    changed.add(name)
                parts.append(
                    {
                        "PartitionIndex": d["PartitionIndex"],
                        "ErrorCode": 0 if ok else 95,
                        "LeaderId": p[2],
                        "LeaderEpoch": p[3],
                        "Isr": list(p[1]),
                        "PartitionEpoch": p[4],
                    }
                )
            out_topics.append({"TopicName": name, "TopicId": t["TopicId"], "Partitions": parts})
        for name in changed:  # every replica learns the new ISR (LeaderAndIsr)
            await self.propagate(name)
        return _Response({"ErrorCode": 0, "Topics": out_topics})

    # -- failures ------------------------------------------------------------------------------

    async def crash(self, b: int) -> None:
        """As kill -9: listener gone, tasks gone, files closed without flush or checkpoint."""
        broker = self.brokers[b]
        self.down.add(b)
        await broker.listener.stop()
        rm = broker.replica_manager
        for f in list(rm.fetchers.values()):
            await f.stop()
        for task in list(broker._tasks):
            task.cancel()
        for task in list(broker._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for p in rm.partitions.values():
            p.make_offline()
            for seg in p.log.segments:
                seg.close()
        self._publish_brokers()

    async def restart(self, b: int) -> Broker:
        old = self.brokers[b]
        broker = self.brokers[b] = Broker(self, b, old.data_dir)
        broker.port = old.port
        await broker.start()
        self.down.discard(b)
        self._publish_brokers()
        for name in self.topics:
            await self.propagate(name)
        return broker

    # -- clients -------------------------------------------------------------------------------

    async def connect(self, b: int) -> Connection:
        return await Connection.open("127.0.0.1", self.brokers[b].port, codec=CODEC)

    def leader(self, name: str, index: int = 0) -> int:
        return self.topics[name].partitions[index][2]


async def wait_until(predicate: Any, timeout: float = 10.0, interval: float = 0.02) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(interval)


def produce_body(
    topic: str, records: bytes, *, acks: int = -1, index: int = 0, timeout_ms: int = 5000
) -> dict:
    return {
        "TransactionalId": None,
        "Acks": acks,
        "TimeoutMs": timeout_ms,
        "TopicData": [{"Name": topic, "PartitionData": [{"Index": index, "Records": records}]}],
    }


def fetch_body(
    topic: str,
    offset: int,
    *,
    index: int = 0,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    partition_max_bytes: int = 1 << 20,
    max_bytes: int = 1 << 24,
    isolation: int = 0,
    current_leader_epoch: int = -1,
) -> dict:
    return {
        "ReplicaId": -1,
        "MaxWaitMs": max_wait_ms,
        "MinBytes": min_bytes,
        "MaxBytes": max_bytes,
        "IsolationLevel": isolation,
        "SessionId": 0,
        "SessionEpoch": -1,
        "Topics": [
            {
                "Topic": topic,
                "Partitions": [
                    {
                        "Partition": index,
                        "CurrentLeaderEpoch": current_leader_epoch,
                        "FetchOffset": offset,
                        "LogStartOffset": -1,
                        "PartitionMaxBytes": partition_max_bytes,
                    }
                ],
            }
        ],
        "ForgottenTopicsData": [],
        "RackId": "",
    }
