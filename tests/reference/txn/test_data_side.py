"""The data side of transactions on a running reference cluster (both metadata stores), driven by
the real coordinator: Produce's verification, read_committed fetches and the last stable
offset around a commit and an abort, TxnOffsetCommit's offsets visible only after the commit
marker (RequireStable answers UNSTABLE_OFFSET_COMMIT meanwhile), DescribeProducers."""

from __future__ import annotations

import time

from conformance.protocol import ApiKey
from conformance.protocol import ErrorCode as E
from conformance.protocol.records import build_batch, encode_batch
from reference_impl.launcher import Cluster
from tests.reference.control_plane import call, topic_body, wait_until
from tests.reference.txn.test_cluster import RETRY

TOPIC, GROUP, TID = "txn-data-side", "txn-data-group", "txn-data-side"
#: coordinator answers worth asking again, after looking the coordinator up again (it loads,
#: moves, or completes a transaction)
AGAIN = RETRY | {int(E.NOT_LEADER_OR_FOLLOWER)}


class Client:
    """Requests that follow the coordinators and the partition's leader wherever they are (on a
    busy machine leaderships can move during the test)."""

    def __init__(self, cluster: Cluster, topic: str = TOPIC, tid: str = TID) -> None:
        self.cluster, self.topic, self.tid = cluster, topic, tid

    def any_broker(self) -> tuple[str, int]:
        node = next(n for n in self.cluster.broker_nodes() if n.running)
        return self.cluster.broker_address(node)

    def find(self, key: str, key_type: int) -> tuple[str, int] | None:
        body = {"Key": key, "KeyType": key_type}
        r = call(self.any_broker(), ApiKey.FIND_COORDINATOR, 3, body)
        return (r["Host"], r["Port"]) if r["ErrorCode"] == 0 else None

    def ask(self, key: str, key_type: int, api: int, version: int, body: dict, code) -> dict:
        """The answer of ``key``'s coordinator once ``code(answer)`` is not worth a retry."""

        def attempt() -> dict | None:
            address = self.find(key, key_type)
            if address is None:
                return None
            r = call(address, api, version, body)
            return None if code(r) in AGAIN else r

        return wait_until(attempt, timeout=60)

    def leader(self) -> tuple[str, int] | None:
        md = call(self.any_broker(), ApiKey.METADATA, 9, {"Topics": [{"Name": self.topic}]})
        brokers = {b["NodeId"]: (b["Host"], b["Port"]) for b in md["Brokers"]}
        return brokers.get(md["Topics"][0]["Partitions"][0]["LeaderId"])

    def produce(self, pid: int, epoch: int, seq: int, version: int = 11) -> dict:
        """A transactional batch of one record to partition 0 at its leader (Produce
        ``version``; NOT_ENOUGH_REPLICAS, a coordinator not ready, is asked again)."""
        records = encode_batch(
            build_batch(
                [(int(time.time() * 1000), b"k", b"v")],
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=seq,
                is_transactional=True,
            )
        )
        body = {
            "TransactionalId": self.tid,
            "Acks": -1,
            "TimeoutMs": 5000,
            "TopicData": [
                {"Name": self.topic, "PartitionData": [{"Index": 0, "Records": records}]}
            ],
        }

        def attempt() -> dict | None:
            address = self.leader()
            if address is None:
                return None
            r = call(address, ApiKey.PRODUCE, version, body)
            r = r["Responses"][0]["PartitionResponses"][0]
            return (
                None if r["ErrorCode"] in (E.NOT_LEADER_OR_FOLLOWER, E.NOT_ENOUGH_REPLICAS) else r
            )

        return wait_until(attempt, timeout=60)

    def committed_view(self) -> dict | None:
        """The read_committed view of partition 0 at its leader (None: no leader to ask)."""
        address = self.leader()
        if address is None:
            return None
        part = {"Partition": 0, "CurrentLeaderEpoch": -1, "FetchOffset": 0, "LogStartOffset": -1}
        body = {
            "ReplicaId": -1,
            "MaxWaitMs": 0,
            "MinBytes": 0,
            "MaxBytes": 1 << 20,
            "IsolationLevel": 1,
            "SessionId": 0,
            "SessionEpoch": -1,
            "Topics": [
                {"Topic": self.topic, "Partitions": [{**part, "PartitionMaxBytes": 1 << 20}]}
            ],
            "ForgottenTopicsData": [],
            "RackId": "",
        }
        p = call(address, ApiKey.FETCH, 11, body)["Responses"][0]["Partitions"][0]
        if p["ErrorCode"]:
            return None
        aborted = [(a["ProducerId"], a["FirstOffset"]) for a in p["AbortedTransactions"]]
        return {"hw": p["HighWatermark"], "lso": p["LastStableOffset"], "aborted": aborted}

    def stable_view(self) -> dict:
        """The read_committed view once the LSO has reached the high watermark."""
        return wait_until(lambda: (v := self.committed_view()) and v["lso"] == v["hw"] and v, 30)

    def group_offset(self, stable: bool) -> tuple[int, int]:
        body = {
            "Groups": [{"GroupId": GROUP, "Topics": [{"Name": TOPIC, "PartitionIndexes": [0]}]}],
            "RequireStable": stable,
        }
        r = self.ask(GROUP, 0, ApiKey.OFFSET_FETCH, 8, body, lambda r: r["Groups"][0]["ErrorCode"])
        p = r["Groups"][0]["Topics"][0]["Partitions"][0]
        return p["CommittedOffset"], p["ErrorCode"]


def _top(r: dict) -> int:
    return r["ErrorCode"]


def _partition_code(r: dict) -> int:
    topics = r.get("ResultsByTopicV3AndBelow") or r.get("Topics")
    parts = topics[0].get("ResultsByPartition") or topics[0].get("Partitions")
    p = parts[0]
    return p.get("PartitionErrorCode", p.get("ErrorCode"))


def test_commit_and_abort_as_consumers_and_groups_see_them(shared_cluster: Cluster) -> None:
    c = Client(shared_cluster)
    created = call(c.any_broker(), ApiKey.CREATE_TOPICS, 5, topic_body(TOPIC, 1, 3))
    assert created["Topics"][0]["ErrorCode"] == 0
    # the first transactional id creates __transaction_state (50 partitions, 3 replicas on the
    # shared cluster) and its leaders load it
    init = {"TransactionalId": TID, "TransactionTimeoutMs": 60000, "ProducerId": -1}
    r = c.ask(TID, 1, ApiKey.INIT_PRODUCER_ID, 4, {**init, "ProducerEpoch": -1}, _top)
    assert r["ErrorCode"] == 0
    pid, epoch = r["ProducerId"], r["ProducerEpoch"]
    txn = {"TransactionalId": TID, "ProducerId": pid, "ProducerEpoch": epoch}
    add = {
        "V3AndBelowTransactionalId": TID,
        "V3AndBelowProducerId": pid,
        "V3AndBelowProducerEpoch": epoch,
        "V3AndBelowTopics": [{"Name": TOPIC, "Partitions": [0]}],
    }
    # a partition not added to the transaction: refused after asking the coordinator
    assert c.produce(pid, epoch, 0)["ErrorCode"] == E.TRANSACTION_ABORTABLE
    assert (
        _partition_code(c.ask(TID, 1, ApiKey.ADD_PARTITIONS_TO_TXN, 3, add, _partition_code)) == 0
    )
    first = c.produce(pid, epoch, 0)
    assert first["ErrorCode"] == 0
    view = wait_until(c.committed_view, 30)
    assert view["lso"] == first["BaseOffset"] < view["hw"]
    r = c.ask(TID, 1, ApiKey.ADD_OFFSETS_TO_TXN, 3, {**txn, "GroupId": GROUP}, _top)
    assert r["ErrorCode"] == 0
    partition = {
        "PartitionIndex": 0,
        "CommittedOffset": 1,
        "CommittedLeaderEpoch": -1,
        "CommittedMetadata": "",
    }
    commit = {
        **txn,
        "GroupId": GROUP,
        "GenerationIdOrMemberEpoch": -1,
        "MemberId": "",
        "GroupInstanceId": None,
        "Topics": [{"Name": TOPIC, "Partitions": [partition]}],
    }
    r = c.ask(GROUP, 0, ApiKey.TXN_OFFSET_COMMIT, 3, commit, _partition_code)
    assert _partition_code(r) == 0
    assert c.group_offset(stable=False) == (-1, 0)
    assert c.group_offset(stable=True) == (-1, E.UNSTABLE_OFFSET_COMMIT)

    r = c.ask(TID, 1, ApiKey.END_TXN, 3, {**txn, "Committed": True}, _top)
    assert r["ErrorCode"] == 0
    assert wait_until(lambda: c.group_offset(stable=True) == (1, 0), timeout=30)
    assert c.stable_view()["aborted"] == []

    # the next transaction aborts: its range is listed to read_committed consumers
    assert (
        _partition_code(c.ask(TID, 1, ApiKey.ADD_PARTITIONS_TO_TXN, 3, add, _partition_code)) == 0
    )
    aborted = c.produce(pid, epoch, 1)
    assert aborted["ErrorCode"] == 0
    r = c.ask(TID, 1, ApiKey.END_TXN, 3, {**txn, "Committed": False}, _top)
    assert r["ErrorCode"] == 0
    assert wait_until(lambda: c.stable_view()["aborted"] == [(pid, aborted["BaseOffset"])], 30)

    body = {"Topics": [{"Name": TOPIC, "PartitionIndexes": [0]}]}
    leader = wait_until(c.leader, 30)
    described = call(leader, ApiKey.DESCRIBE_PRODUCERS, 0, body)
    (state,) = described["Topics"][0]["Partitions"][0]["ActiveProducers"]
    assert (state["ProducerId"], state["LastSequence"], state["CurrentTxnStartOffset"]) == (
        pid,
        1,
        -1,
    )
