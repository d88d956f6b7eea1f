"""The transaction handlers over the wire (an in-process listener): versions, error mapping and
TRANSACTIONAL_ID / TOPIC / GROUP / CLUSTER authorisation as Kafka's KafkaApis."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable
from types import SimpleNamespace

import pytest

from conformance.client.wire import Connection
from conformance.protocol import ApiKey, Codec
from conformance.protocol import ErrorCode as E
from reference_impl.net.listener import Listener
from reference_impl.txn.coordinator import Marker, TxnConfig, TxnCoordinator

CODEC = Codec.from_specs()
#: the handlers under test, as the node builds them
MODULES = [
    importlib.import_module(f"reference_impl.handlers.{name}")
    for name in (
        "add_offsets_to_txn",
        "add_partitions_to_txn",
        "describe_transactions",
        "end_txn",
        "find_coordinator",
        "init_producer_id",
        "list_transactions",
    )
]
TOPICS = {"t": 2, "__consumer_offsets": 50}
GROUP_PARTITION = 7


class Store:
    async def append(self, partition: int, key: bytes, value: bytes | None) -> int:
        return 0


class Leaders:
    def __init__(self) -> None:
        self.written: list[Marker] = []

    async def write(self, marker: Marker) -> dict[tuple[str, int], int]:
        self.written.append(marker)
        return dict.fromkeys(marker.partitions, 0)


class Cache:
    def partition(self, topic: str, index: int) -> object | None:
        return object() if 0 <= index < TOPICS.get(topic, 0) else None


class Broker:
    def __init__(self, deny: set[tuple[str, str, str]]) -> None:
        ids = iter(range(5000, 6000))
        self.leaders = Leaders()
        self.coordinator = TxnCoordinator(
            TxnConfig(max_timeout_ms=60_000), Store(), self.leaders, lambda: next(ids)
        )
        self.coordinator.finish_loading(self.coordinator.start_loading(0, 3), [])
        self.deny = deny
        transactions = SimpleNamespace(
            coordinator=self.coordinator, allocator=SimpleNamespace(allocate=lambda: next(ids))
        )
        groups = SimpleNamespace(coordinator=SimpleNamespace(partition_for=lambda g: 7))
        node = SimpleNamespace(
            transactions=transactions,
            groups=groups,
            authorize=self._authorize,
            metadata_cache=Cache(),
        )
        self.listener = Listener("PLAINTEXT", "zkBroker", CODEC, [m.api(node) for m in MODULES])

    def _authorize(self, session: object, operation: str, resource: tuple[str, str]) -> bool:
        return (operation, *resource) not in self.deny


def run(test: Callable[[Connection, Broker], Awaitable[None]], deny: set = frozenset()) -> None:
    async def go() -> None:
        broker = Broker(set(deny))
        port = await broker.listener.start()
        conn = await Connection.open("127.0.0.1", port, codec=CODEC)
        try:
            await test(conn, broker)
        finally:
            await conn.close()
            await broker.listener.stop()

    asyncio.run(asyncio.wait_for(go(), 20))


async def call(conn: Connection, api_key: int, version: int, body: dict) -> dict:
    return (await conn.request(api_key, version, body)).body


async def init(conn: Connection, version: int, tid: str | None, **kw: int) -> dict:
    body = {
        "TransactionalId": tid,
        "TransactionTimeoutMs": kw.get("timeout", 10_000),
        "ProducerId": kw.get("pid", -1),
        "ProducerEpoch": kw.get("epoch", -1),
    }
    return await call(conn, ApiKey.INIT_PRODUCER_ID, version, body)


async def add(conn: Connection, version: int, tid: str, pid: int, epoch: int, topics: dict) -> dict:
    body = {
        "V3AndBelowTransactionalId": tid,
        "V3AndBelowProducerId": pid,
        "V3AndBelowProducerEpoch": epoch,
        "V3AndBelowTopics": [{"Name": t, "Partitions": ps} for t, ps in topics.items()],
    }
    r = await call(conn, ApiKey.ADD_PARTITIONS_TO_TXN, version, body)
    return {
        (t["Name"], p["PartitionIndex"]): p["PartitionErrorCode"]
        for t in r["ResultsByTopicV3AndBelow"]
        for p in t["ResultsByPartition"]
    }


async def end(conn: Connection, version: int, tid: str, pid: int, epoch: int, commit: bool) -> int:
    body = {"TransactionalId": tid, "ProducerId": pid, "ProducerEpoch": epoch, "Committed": commit}
    return (await call(conn, ApiKey.END_TXN, version, body))["ErrorCode"]


@pytest.mark.parametrize("version", [0, 2, 3, 4])
def test_a_transaction_through_the_handlers_and_fenced_codes_per_version(version: int) -> None:
    """PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before InitProducerId v4, AddPartitionsToTxn,
    AddOffsetsToTxn and EndTxn v2."""
    fenced = E.PRODUCER_FENCED if version >= 2 else E.INVALID_PRODUCER_EPOCH

    async def test(conn: Connection, broker: Broker) -> None:
        plain = await init(conn, min(version, 5), None)
        assert plain["ErrorCode"] == 0 and plain["ProducerEpoch"] == 0
        first = await init(conn, version, "tx")
        pid = first["ProducerId"]
        assert (first["ErrorCode"], first["ProducerEpoch"]) == (0, 0)
        assert await add(conn, min(version, 3), "tx", pid, 0, {"t": [0, 1]}) == {
            ("t", 0): 0,
            ("t", 1): 0,
        }
        offsets = {"TransactionalId": "tx", "ProducerId": pid, "ProducerEpoch": 0, "GroupId": "g"}
        assert (await call(conn, ApiKey.ADD_OFFSETS_TO_TXN, version, offsets))["ErrorCode"] == 0
        assert await end(conn, version, "tx", pid, 0, True) == 0
        await broker.coordinator.wait_markers()
        assert broker.leaders.written[0].partitions == {
            ("t", 0),
            ("t", 1),
            ("__consumer_offsets", GROUP_PARTITION),
        }
        assert (await init(conn, version, "tx"))["ProducerEpoch"] == 1
        assert await add(conn, min(version, 3), "tx", pid, 0, {"t": [0]}) == {("t", 0): fenced}
        assert (await call(conn, ApiKey.ADD_OFFSETS_TO_TXN, version, offsets))[
            "ErrorCode"
        ] == fenced
        assert await end(conn, version, "tx", pid, 0, True) == fenced
        if version >= 3:  # KIP-360: the producer names its id and a stale epoch
            stale = await init(conn, version, "tx", pid=pid, epoch=0)
            assert stale["ErrorCode"] == (
                E.PRODUCER_FENCED if version >= 4 else E.INVALID_PRODUCER_EPOCH
            )
            assert (await init(conn, version, "tx", pid=pid))["ErrorCode"] == E.INVALID_REQUEST
            assert (await init(conn, version, None, epoch=3))["ErrorCode"] == E.INVALID_REQUEST

    run(test)


def test_partition_checks_authorisation_and_describe_list() -> None:
    deny = {
        ("WRITE", "TRANSACTIONAL_ID", "secret"),
        ("WRITE", "TOPIC", "t"),
        ("DESCRIBE", "TRANSACTIONAL_ID", "hidden"),
        ("READ", "GROUP", "g"),
        ("DESCRIBE", "TRANSACTIONAL_ID", "nosee"),
    }

    async def test(conn: Connection, broker: Broker) -> None:
        pid = (await init(conn, 3, "tx"))["ProducerId"]
        # one bad partition fails them all; internal topics are never writable here
        codes = await add(conn, 3, "tx", pid, 0, {"t": [0], "__consumer_offsets": [1], "nope": [0]})
        assert codes == {
            ("t", 0): E.TOPIC_AUTHORIZATION_FAILED,
            ("__consumer_offsets", 1): E.TOPIC_AUTHORIZATION_FAILED,
            ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert await add(conn, 3, "secret", pid, 0, {"x": [0]}) == {
            ("x", 0): E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        }
        offsets = {"TransactionalId": "tx", "ProducerId": pid, "ProducerEpoch": 0, "GroupId": "g"}
        r = await call(conn, ApiKey.ADD_OFFSETS_TO_TXN, 3, offsets)
        assert r["ErrorCode"] == E.GROUP_AUTHORIZATION_FAILED
        assert await end(conn, 3, "secret", pid, 0, True) == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert await end(conn, 3, "tx", pid, 0, True) == E.INVALID_TXN_STATE  # nothing begun
        assert await end(conn, 3, "other", pid, 0, True) == E.INVALID_PRODUCER_ID_MAPPING
        assert (await init(conn, 4, "tx", timeout=60_001))[
            "ErrorCode"
        ] == E.INVALID_TRANSACTION_TIMEOUT
        # v4+ is the brokers' form
        v4 = {
            "Transactions": [
                {
                    "TransactionalId": "tx",
                    "ProducerId": pid,
                    "ProducerEpoch": 0,
                    "VerifyOnly": True,
                    "Topics": [{"Name": "t", "Partitions": [0]}],
                }
            ]
        }
        refused = await call(conn, ApiKey.ADD_PARTITIONS_TO_TXN, 4, v4)
        assert refused["ErrorCode"] == 0  # this node's authorizer denies no CLUSTER_ACTION
        (verified,) = refused["ResultsByTransaction"]
        assert verified["TopicResults"][0]["ResultsByPartition"][0]["PartitionErrorCode"] == (
            E.TRANSACTION_ABORTABLE
        )
        # FindCoordinator key type 1 asks DESCRIBE on the id
        found = await call(conn, ApiKey.FIND_COORDINATOR, 3, {"Key": "hidden", "KeyType": 1})
        assert found["ErrorCode"] == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        # Describe / ListTransactions
        await init(conn, 3, "nosee")
        d = await call(
            conn,
            ApiKey.DESCRIBE_TRANSACTIONS,
            0,
            {"TransactionalIds": ["tx", "hidden", "unknown", ""]},
        )
        codes = [(s["TransactionalId"], s["ErrorCode"]) for s in d["TransactionStates"]]
        assert codes == [
            ("tx", 0),
            ("hidden", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
            ("unknown", E.TRANSACTIONAL_ID_NOT_FOUND),
            ("", E.INVALID_REQUEST),
        ]
        tx = d["TransactionStates"][0]
        assert (tx["TransactionState"], tx["ProducerEpoch"], tx["TransactionTimeoutMs"]) == (
            "Empty",
            0,
            10_000,
        )
        listed = await call(
            conn,
            ApiKey.LIST_TRANSACTIONS,
            1,
            {"StateFilters": ["Empty", "Nope"], "ProducerIdFilters": [], "DurationFilter": -1},
        )
        assert listed["UnknownStateFilters"] == ["Nope"]
        assert [s["TransactionalId"] for s in listed["TransactionStates"]] == ["tx"]

    run(test, deny)


def test_cluster_action_gates_the_brokers_form() -> None:
    async def test(conn: Connection, broker: Broker) -> None:
        body = {"Transactions": []}
        r = await call(conn, ApiKey.ADD_PARTITIONS_TO_TXN, 5, body)
        assert (r["ErrorCode"], r["ResultsByTransaction"]) == (E.CLUSTER_AUTHORIZATION_FAILED, [])

    run(test, {("CLUSTER_ACTION", "CLUSTER", "kafka-cluster")})
