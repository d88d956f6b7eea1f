"""The transaction coordinator on a running reference cluster, both metadata stores: the client
path over the wire, its state in ``__transaction_state`` surviving a kill -9 of the coordinator's
broker (the new leader replays it) and a restart of the whole cluster, fencing, and a timeout that
aborts."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.protocol import ApiKey
from conformance.protocol import ErrorCode as E
from conformance.targets.zookeeper import ZooKeeperServer
from reference_impl.groups.placement import partition_for
from reference_impl.launcher import Cluster
from tests.reference.control_plane import (
    STORES,
    api_versions,
    call,
    new_cluster,
    topic_body,
    wait_until,
)

TXN = {"settings": {"transactions": {"state_partitions": 4, "abort_interval_ms": 100}}}
RETRY = {
    int(E.COORDINATOR_NOT_AVAILABLE),
    int(E.NOT_COORDINATOR),
    int(E.COORDINATOR_LOAD_IN_PROGRESS),
    int(E.CONCURRENT_TRANSACTIONS),
}


def coordinator(cluster: Cluster, tid: str) -> tuple[str, int]:
    def find() -> tuple[str, int] | None:
        for node in cluster.broker_nodes():
            if node.running:
                r = call(
                    cluster.broker_address(node),
                    ApiKey.FIND_COORDINATOR,
                    3,
                    {"Key": tid, "KeyType": 1},
                )
                return (r["Host"], r["Port"]) if r["ErrorCode"] == 0 else None
        return None

    return wait_until(find, timeout=20)


def settled(address: tuple[str, int], api_key: int, version: int, body: dict) -> dict:
    """The answer once it is not a retriable coordinator error (loading, moving, completing)."""

    def ask() -> dict | None:
        r = call(address, api_key, version, body)
        return None if r.get("ErrorCode") in RETRY else r

    return wait_until(ask, timeout=20)


def describe(address: tuple[str, int], tid: str) -> dict:
    r = call(address, ApiKey.DESCRIBE_TRANSACTIONS, 0, {"TransactionalIds": [tid]})
    return r["TransactionStates"][0]


def _look(cluster: Cluster, tid: str) -> tuple[str, int, int] | None:
    """(state, producer id, epoch) of ``tid`` at its coordinator, None while it loads."""
    d = describe(coordinator(cluster, tid), tid)
    if d["ErrorCode"] in RETRY:
        return None
    assert d["ErrorCode"] == 0, d
    return d["TransactionState"], d["ProducerId"], d["ProducerEpoch"]


def init(address: tuple[str, int], tid: str, timeout_ms: int = 60000) -> dict:
    return settled(
        address,
        ApiKey.INIT_PRODUCER_ID,
        4,
        {
            "TransactionalId": tid,
            "TransactionTimeoutMs": timeout_ms,
            "ProducerId": -1,
            "ProducerEpoch": -1,
        },
    )


def add(address: tuple[str, int], tid: str, pid: int, epoch: int, topic: str) -> int:
    r = call(
        address,
        ApiKey.ADD_PARTITIONS_TO_TXN,
        3,
        {
            "V3AndBelowTransactionalId": tid,
            "V3AndBelowProducerId": pid,
            "V3AndBelowProducerEpoch": epoch,
            "V3AndBelowTopics": [{"Name": topic, "Partitions": [0, 1]}],
        },
    )
    (t,) = r["ResultsByTopicV3AndBelow"]
    codes = {p["PartitionErrorCode"] for p in t["ResultsByPartition"]}
    assert len(codes) == 1, r
    return codes.pop()


@pytest.mark.parametrize("store", STORES)
def test_transactions_survive_a_kill_and_a_restart_and_time_out(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    zk: ZooKeeperServer | None = (
        request.getfixturevalue("zookeeper") if store == "zookeeper" else None
    )
    cluster = new_cluster(tmp_path, store, zk, broker_overrides=TXN)
    cluster.start(timeout=60)
    try:
        any_broker = cluster.broker_address(cluster.broker_nodes()[0])
        assert (
            call(any_broker, ApiKey.CREATE_TOPICS, 5, topic_body("tx", 3, 3))["Topics"][0][
                "ErrorCode"
            ]
            == 0
        )
        markers_served = ApiKey.WRITE_TXN_MARKERS in api_versions(any_broker)
        a = coordinator(cluster, "open")
        first = init(a, "open")
        assert (first["ErrorCode"], first["ProducerEpoch"]) == (0, 0)
        pid = first["ProducerId"]
        assert add(a, "open", pid, 0, "tx") == 0
        open_state = describe(a, "open")
        assert open_state["TransactionState"] == "Ongoing"
        assert open_state["Topics"] == [{"Topic": "tx", "Partitions": [0, 1]}]
        # v4's verify-only form, as a partition leader asks it (KIP-890): brokers only
        verify = {
            "Transactions": [
                {
                    "TransactionalId": "open",
                    "ProducerId": pid,
                    "ProducerEpoch": 0,
                    "VerifyOnly": True,
                    "Topics": [{"Name": "tx", "Partitions": [1, 2]}],
                }
            ]
        }
        refused = call(a, ApiKey.ADD_PARTITIONS_TO_TXN, 4, verify)
        assert refused["ErrorCode"] == E.CLUSTER_AUTHORIZATION_FAILED
        coordinator_node = next(n for n in cluster.broker_nodes() if cluster.broker_address(n) == a)
        internal = cluster.broker_address(coordinator_node, "INTERNAL")
        (verified,) = call(internal, ApiKey.ADD_PARTITIONS_TO_TXN, 4, verify)[
            "ResultsByTransaction"
        ]
        codes = {
            p["PartitionIndex"]: p["PartitionErrorCode"]
            for p in verified["TopicResults"][0]["ResultsByPartition"]
        }
        assert codes == {1: 0, 2: E.TRANSACTION_ABORTABLE}
        assert describe(a, "open")["Topics"] == [{"Topic": "tx", "Partitions": [0, 1]}]
        # a transaction left PrepareCommit on the same coordinator (its markers resent at load)
        prepared = next(
            f"p{i}" for i in range(100) if partition_for(f"p{i}", 4) == partition_for("open", 4)
        )
        assert coordinator(cluster, prepared) == a
        p = init(a, prepared)
        assert add(a, prepared, p["ProducerId"], 0, "tx") == 0
        end = call(
            a,
            ApiKey.END_TXN,
            3,
            {
                "TransactionalId": prepared,
                "ProducerId": p["ProducerId"],
                "ProducerEpoch": 0,
                "Committed": True,
            },
        )
        assert end["ErrorCode"] == 0
        b = coordinator(cluster, "bumped")
        assert init(b, "bumped")["ProducerEpoch"] == 0
        bumped = init(b, "bumped")
        assert bumped["ProducerEpoch"] == 1
        assert init(a, "open", timeout_ms=0)["ErrorCode"] == E.INVALID_TRANSACTION_TIMEOUT

        # kill -9 the broker coordinating "open": the new leader of its partition replays it
        cluster.kill(coordinator_node.name)
        a2 = wait_until(lambda: (c := coordinator(cluster, "open")) != a and c, timeout=30)
        again = settled(a2, ApiKey.DESCRIBE_TRANSACTIONS, 0, {"TransactionalIds": ["open"]})
        again = again["TransactionStates"][0]
        for field in (
            "TransactionState",
            "ProducerId",
            "ProducerEpoch",
            "Topics",
            "TransactionStartTimeMs",
            "TransactionTimeoutMs",
        ):
            assert again[field] == open_state[field], field
        committed = "CompleteCommit" if markers_served else "PrepareCommit"
        wait_until(lambda: describe(a2, prepared)["TransactionState"] == committed)
        b2 = coordinator(cluster, "bumped")
        d = settled(b2, ApiKey.DESCRIBE_TRANSACTIONS, 0, {"TransactionalIds": ["bumped"]})
        assert d["TransactionStates"][0]["ProducerEpoch"] == 1
        # the fenced epoch stays fenced (v3: PRODUCER_FENCED; v0-1 say INVALID_PRODUCER_EPOCH)
        assert add(b2, "bumped", bumped["ProducerId"], 0, "tx") == E.PRODUCER_FENCED

        # EndTxn: PrepareAbort durable, then the markers (CompleteAbort once leaders write them)
        end = call(
            a2,
            ApiKey.END_TXN,
            3,
            {"TransactionalId": "open", "ProducerId": pid, "ProducerEpoch": 0, "Committed": False},
        )
        assert end["ErrorCode"] == 0
        final = "CompleteAbort" if markers_served else "PrepareAbort"
        wait_until(lambda: describe(a2, "open")["TransactionState"] == final)

        # a transaction left open past its timeout is fenced (epoch + 1) and aborted
        c = coordinator(cluster, "slow")
        slow = init(c, "slow", timeout_ms=300)
        assert add(c, "slow", slow["ProducerId"], slow["ProducerEpoch"], "tx") == 0
        expired = wait_until(
            lambda: (s := describe(c, "slow"))["TransactionState"] != "Ongoing" and s, timeout=10
        )
        assert expired["TransactionState"] in ("PrepareAbort", "CompleteAbort")
        assert expired["ProducerEpoch"] == slow["ProducerEpoch"] + 1
        assert add(c, "slow", slow["ProducerId"], slow["ProducerEpoch"], "tx") in (
            E.PRODUCER_FENCED,
            E.CONCURRENT_TRANSACTIONS,
        )

        # the whole cluster stopped and started again on its data: every id as it was
        ids = ("open", prepared, "bumped", "slow")
        settled_states = ("Empty", "CompleteCommit", "CompleteAbort", "Ongoing")
        if markers_served:
            wait_until(lambda: all(_look(cluster, t)[0] in settled_states for t in ids))
        before = {t: _look(cluster, t) for t in ids}
        cluster.stop()
        cluster.start(timeout=60)
        after = {t: wait_until(lambda t=t: _look(cluster, t)) for t in ids}
        assert after == before
    finally:
        cluster.stop()
