"""The transaction coordinator as a library: Kafka's transitions, fencing, markers, replay."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from conformance.protocol import ApiKey, Codec
from conformance.protocol import ErrorCode as E
from reference_impl.net.listener import Api, Listener
from reference_impl.txn.coordinator import Marker, TxnConfig, TxnCoordinator
from reference_impl.txn.records import (
    TxnRecord,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from reference_impl.txn.service import BrokerMarkers
from reference_impl.txn.state import TxnState


class Store:
    """__transaction_state in memory: (partition, key, value) in append order."""

    def __init__(self) -> None:
        self.records: list[tuple[int, bytes, bytes | None]] = []
        self.fail_with = 0

    async def append(self, partition: int, key: bytes, value: bytes | None) -> int:
        await asyncio.sleep(0)
        if self.fail_with:
            return self.fail_with
        self.records.append((partition, key, value))
        return 0

    def states(self, tid: str) -> list[str]:
        return [
            decode_value(v).state.name
            for _, k, v in self.records
            if decode_key(k) == tid and v is not None
        ]


class Leaders:
    """Partition leaders answering WriteTxnMarkers with ``answer`` (or holding them)."""

    def __init__(self) -> None:
        self.written: list[Marker] = []
        self.answer = 0
        self.open = asyncio.Event()
        self.open.set()

    async def write(self, marker: Marker) -> dict[tuple[str, int], int]:
        await self.open.wait()
        if self.answer == 0:
            self.written.append(marker)
        return dict.fromkeys(marker.partitions, self.answer)


class Clock:
    def __init__(self) -> None:
        self.t = 1_700_000_000_000

    def __call__(self) -> int:
        return self.t


def make(store: Store | None = None, leaders: Leaders | None = None, clock: Clock | None = None):
    ids = iter(range(1000, 2000))
    c = TxnCoordinator(
        TxnConfig(max_timeout_ms=60_000, marker_backoff_ms=1),
        store or Store(),
        leaders or Leaders(),
        lambda: next(ids),
        now_ms=clock or Clock(),
    )
    c.finish_loading(c.start_loading(0, 7), [])
    return c


async def begun(c: TxnCoordinator, tid: str = "t") -> tuple[int, int]:
    """A new producer of ``tid`` with partition a-0 in an ongoing transaction: (id, epoch)."""
    _, pid, epoch = await c.init_producer_id(tid, 10_000, None)
    assert await c.add_partitions(tid, pid, epoch, {("a", 0)}) == 0
    return pid, epoch


def run(coro):
    return asyncio.run(coro)


def test_init_begin_commit_markers_then_complete() -> None:
    async def go():
        store, leaders = Store(), Leaders()
        c = make(store, leaders)
        err, pid, epoch = await c.init_producer_id("t", 10_000, None)
        assert (err, pid, epoch) == (0, 1000, 0)
        assert await c.add_partitions("t", pid, epoch, {("a", 0), ("b", 1)}) == 0
        assert c.describe("t")["TransactionState"] == "Ongoing"
        assert await c.end_txn("t", pid, epoch, True) == 0
        await c.wait_markers()
        assert leaders.written == [Marker(pid, 0, True, 7, frozenset({("a", 0), ("b", 1)}))]
        assert store.states("t") == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
        d = c.describe("t")
        assert (d["TransactionState"], d["Topics"]) == ("CompleteCommit", [])
        # a retried commit is NONE, an abort of it INVALID_TXN_STATE
        assert await c.end_txn("t", pid, epoch, True) == 0
        assert await c.end_txn("t", pid, epoch, False) == E.INVALID_TXN_STATE
        # a second InitProducerId bumps the epoch; the old epoch is fenced
        assert (await c.init_producer_id("t", 10_000, None))[2] == 1
        assert await c.add_partitions("t", pid, 0, {("a", 0)}) == E.PRODUCER_FENCED
        assert await c.end_txn("t", pid, 0, True) == E.PRODUCER_FENCED
        assert await c.end_txn("t", pid + 1, 1, True) == E.INVALID_PRODUCER_ID_MAPPING
        assert await c.end_txn("t", pid, 1, True) == E.INVALID_TXN_STATE  # Empty

    run(go())


def test_markers_pending_answers_concurrent_then_complete() -> None:
    async def go():
        store, leaders = Store(), Leaders()
        c = make(store, leaders)
        pid, epoch = await begun(c)
        leaders.open.clear()
        assert await c.end_txn("t", pid, epoch, False) == 0
        assert c.describe("t")["TransactionState"] == "PrepareAbort"
        assert await c.end_txn("t", pid, epoch, False) == E.CONCURRENT_TRANSACTIONS
        assert await c.end_txn("t", pid, epoch, True) == E.CONCURRENT_TRANSACTIONS  # pending
        assert await c.add_partitions("t", pid, epoch, {("a", 1)}) == E.CONCURRENT_TRANSACTIONS
        assert (await c.init_producer_id("t", 10_000, None))[0] == E.CONCURRENT_TRANSACTIONS
        leaders.answer = int(E.NOT_LEADER_OR_FOLLOWER)
        leaders.open.set()
        await asyncio.sleep(0.02)
        assert c.describe("t")["TransactionState"] == "PrepareAbort"  # retrying
        leaders.answer = 0
        await c.wait_markers()
        assert c.describe("t")["TransactionState"] == "CompleteAbort"

    run(go())


def test_init_during_ongoing_fences_and_aborts() -> None:
    async def go():
        store, leaders = Store(), Leaders()
        c = make(store, leaders)
        pid, epoch = await begun(c)
        assert (await c.init_producer_id("t", 10_000, None))[0] == E.CONCURRENT_TRANSACTIONS
        await c.wait_markers()
        # the abort marker carries the bumped epoch
        assert leaders.written == [Marker(pid, 1, False, 7, frozenset({("a", 0)}))]
        assert await c.end_txn("t", pid, epoch, True) == E.PRODUCER_FENCED
        assert await c.init_producer_id("t", 10_000, None) == (0, pid, 2)

    run(go())


def test_kip360_expected_epoch() -> None:
    async def go():
        c = make()
        _, pid, _ = await c.init_producer_id("t", 10_000, None)
        assert await c.init_producer_id("t", 10_000, (pid, 0)) == (0, pid, 1)
        # the same request again (its answer lost): the same epoch back
        assert await c.init_producer_id("t", 10_000, (pid, 0)) == (0, pid, 1)
        assert (await c.init_producer_id("t", 10_000, (pid, 5)))[0] == E.PRODUCER_FENCED
        assert (await c.init_producer_id("t", 10_000, (pid + 9, 1)))[0] == E.PRODUCER_FENCED

    run(go())


def test_timeouts_and_errors() -> None:
    async def go():
        clock = Clock()
        store, leaders = Store(), Leaders()
        c = make(store, leaders, clock)
        assert (await c.init_producer_id("t", 0, None))[0] == E.INVALID_TRANSACTION_TIMEOUT
        assert (await c.init_producer_id("t", 60_001, None))[0] == E.INVALID_TRANSACTION_TIMEOUT
        assert (await c.init_producer_id("", 1000, None))[0] == E.INVALID_REQUEST
        _, pid, epoch = await c.init_producer_id("t", 1000, None)
        await c.add_partitions("t", pid, epoch, {("a", 0)})
        clock.t += 1000
        assert await c.abort_timed_out() == 0
        clock.t += 1
        assert await c.abort_timed_out() == 1
        await c.wait_markers()
        assert c.describe("t")["TransactionState"] == "CompleteAbort"
        assert c.describe("t")["ProducerEpoch"] == 1
        assert await c.add_partitions("t", pid, epoch, {("a", 0)}) == E.PRODUCER_FENCED
        # a failed append: nothing changes, the client is told to find the coordinator again
        store.fail_with = int(E.NOT_LEADER_OR_FOLLOWER)
        assert (await c.init_producer_id("t", 1000, None))[0] == E.NOT_COORDINATOR
        assert c.describe("t")["ProducerEpoch"] == 1
        assert c.describe("nope")["ErrorCode"] == E.TRANSACTIONAL_ID_NOT_FOUND
        err, unknown, found = c.list(["CompleteAbort", "Bogus"], [], -1)
        assert (err, unknown, found) == (0, ["Bogus"], [("t", pid, "CompleteAbort")])

    run(go())


def test_replay_resends_markers_of_prepared() -> None:
    async def go():
        store, leaders = Store(), Leaders()
        c = make(store, leaders)
        pid, epoch = await begun(c)
        leaders.open.clear()
        assert await c.end_txn("t", pid, epoch, True) == 0
        c.unload(0)  # the coordinator moves before any marker
        leaders.open.set()
        await c.wait_markers()
        assert leaders.written == [] or store.states("t")[-1] == "PrepareCommit"
        # a new coordinator (epoch 8) replays the log and finishes the commit
        c2 = make(store, leaders)
        part = c2.start_loading(0, 8)
        assert (await c2.init_producer_id("t", 10_000, None))[0] == E.COORDINATOR_LOAD_IN_PROGRESS
        c2.finish_loading(part, [(k, v) for _, k, v in store.records])
        await c2.wait_markers()
        assert leaders.written[-1] == Marker(pid, 0, True, 8, frozenset({("a", 0)}))
        assert c2.describe("t")["TransactionState"] == "CompleteCommit"
        assert (await c.init_producer_id("t", 10_000, None))[0] == E.NOT_COORDINATOR

    run(go())


def test_record_layout() -> None:
    r = TxnRecord(5, 3, 60000, TxnState.Ongoing, frozenset({("a", 1), ("a", 0)}), 10, 9)
    assert decode_value(encode_value(r)) == r
    assert encode_key("t") == b"\x00\x00\x00\x01t"
    assert encode_value(r)[:2] == b"\x00\x00"
    with pytest.raises(ValueError):
        decode_value(b"\x00\x02" + encode_value(r)[2:])


# -- the broker's marker sender: WriteTxnMarkers on the wire ----------------------------------


def test_markers_go_to_each_leader_as_write_txn_markers() -> None:
    """BrokerMarkers groups the partitions by leader, sends one WriteTxnMarkers (v1) to each on
    its inter-broker endpoint, and reads each partition's code; a partition whose topic is gone
    needs no marker, one without a live leader is retried, a leader that does not serve API 27
    is retried later."""
    codec = Codec.from_specs()
    seen: list[tuple[int, int, dict]] = []

    def leader(node_id: int, code: int) -> Listener:
        async def handle(ctx, body: dict) -> dict:
            seen.append((node_id, ctx.version, body))
            return {
                "Markers": [
                    {
                        "ProducerId": m["ProducerId"],
                        "Topics": [
                            {
                                "Name": t["Name"],
                                "Partitions": [
                                    {"PartitionIndex": p, "ErrorCode": code}
                                    for p in t["PartitionIndexes"]
                                ],
                            }
                            for t in m["Topics"]
                        ],
                    }
                    for m in body["Markers"]
                ]
            }

        return Listener("INTERNAL", "zkBroker", codec, [Api(ApiKey.WRITE_TXN_MARKERS, handle)])

    async def go() -> None:
        one, two = leader(1, 0), leader(2, int(E.NOT_ENOUGH_REPLICAS))
        bare = Listener("INTERNAL", "zkBroker", codec, [])
        ports = {1: await one.start(), 2: await two.start(), 3: await bare.start()}
        leaders = {("a", 0): 1, ("a", 1): 2, ("b", 0): 1, ("c", 0): -1, ("d", 0): 3}
        cache = SimpleNamespace(
            partition=lambda t, p: None if t == "gone" else SimpleNamespace(leader=leaders[(t, p)]),
            alive=lambda b: b in ports,
            endpoint=lambda b, listener: SimpleNamespace(host="127.0.0.1", port=ports[b]),
        )
        node = SimpleNamespace(
            metadata_cache=cache,
            codec=codec,
            node_id=9,
            config=SimpleNamespace(inter_broker_listener="INTERNAL", request_timeout_ms=5000),
        )
        sender = BrokerMarkers(node)
        try:
            marker = Marker(7, 3, True, 11, frozenset({*leaders, ("gone", 0)}))
            results = await sender.write(marker)
            assert results == {
                ("a", 0): 0,
                ("b", 0): 0,
                ("a", 1): E.NOT_ENOUGH_REPLICAS,
                ("gone", 0): 0,
                ("c", 0): E.NOT_LEADER_OR_FOLLOWER,
                ("d", 0): E.REQUEST_TIMED_OUT,
            }
            by_node = {n: (v, b) for n, v, b in seen}
            assert set(by_node) == {1, 2}
            version, body = by_node[1]
            assert version == 1
            assert body["Markers"] == [
                {
                    "ProducerId": 7,
                    "ProducerEpoch": 3,
                    "TransactionResult": True,
                    "CoordinatorEpoch": 11,
                    "Topics": [
                        {"Name": "a", "PartitionIndexes": [0]},
                        {"Name": "b", "PartitionIndexes": [0]},
                    ],
                    "TransactionVersion": 0,
                }
            ]
        finally:
            for broker in list(sender.peers.conns):
                await sender.peers.drop(broker)
            for listener in (one, two, bare):
                await listener.stop()

    asyncio.run(asyncio.wait_for(go(), 20))
