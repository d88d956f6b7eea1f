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
from tests.reference.txn.test_cluster import add, coordinator, init, settled

TOPIC, GROUP, TID = "txn-data-side", "txn-data-group", "txn-data-side"


def leader_of(cluster: Cluster, any_broker: tuple[str, int]) -> tuple[str, int]:
    md = call(any_broker, ApiKey.METADATA, 9, {"Topics": [{"Name": TOPIC}]})
    brokers = {b["NodeId"]: (b["Host"], b["Port"]) for b in md["Brokers"]}
    leader = md["Topics"][0]["Partitions"][0]["LeaderId"]
    return brokers[leader]


def produce(address: tuple[str, int], pid: int, epoch: int, seq: int) -> dict:
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
        "TransactionalId": TID,
        "Acks": -1,
        "TimeoutMs": 5000,
        "TopicData": [{"Name": TOPIC, "PartitionData": [{"Index": 0, "Records": records}]}],
    }
    return call(address, ApiKey.PRODUCE, 11, body)["Responses"][0]["PartitionResponses"][0]


def committed_view(address: tuple[str, int]) -> dict:
    part = {"Partition": 0, "CurrentLeaderEpoch": -1, "FetchOffset": 0, "LogStartOffset": -1}
    body = {
        "ReplicaId": -1,
        "MaxWaitMs": 0,
        "MinBytes": 0,
        "MaxBytes": 1 << 20,
        "IsolationLevel": 1,
        "SessionId": 0,
        "SessionEpoch": -1,
        "Topics": [{"Topic": TOPIC, "Partitions": [{**part, "PartitionMaxBytes": 1 << 20}]}],
        "ForgottenTopicsData": [],
        "RackId": "",
    }
    p = call(address, ApiKey.FETCH, 11, body)["Responses"][0]["Partitions"][0]
    aborted = [(a["ProducerId"], a["FirstOffset"]) for a in p["AbortedTransactions"]]
    return {"hw": p["HighWatermark"], "lso": p["LastStableOffset"], "aborted": aborted}


def group_offset(address: tuple[str, int], stable: bool) -> tuple[int, int]:
    body = {
        "Groups": [{"GroupId": GROUP, "Topics": [{"Name": TOPIC, "PartitionIndexes": [0]}]}],
        "RequireStable": stable,
    }
    r = settled(address, ApiKey.OFFSET_FETCH, 8, body)
    p = r["Groups"][0]["Topics"][0]["Partitions"][0]
    return p["CommittedOffset"], p["ErrorCode"]


def end(address: tuple[str, int], pid: int, epoch: int, commit: bool) -> int:
    body = {"TransactionalId": TID, "ProducerId": pid, "ProducerEpoch": epoch, "Committed": commit}
    return settled(address, ApiKey.END_TXN, 3, body)["ErrorCode"]


def test_commit_and_abort_as_consumers_and_groups_see_them(shared_cluster: Cluster) -> None:
    any_broker = shared_cluster.broker_address(shared_cluster.broker_nodes()[0])
    created = call(any_broker, ApiKey.CREATE_TOPICS, 5, topic_body(TOPIC, 2, 3))
    assert created["Topics"][0]["ErrorCode"] == 0
    leader = leader_of(shared_cluster, any_broker)
    tc = coordinator(shared_cluster, TID)
    r = init(tc, TID)
    pid, epoch = r["ProducerId"], r["ProducerEpoch"]
    # a partition not added to the transaction: refused after asking the coordinator
    assert produce(leader, pid, epoch, 0)["ErrorCode"] == E.TRANSACTION_ABORTABLE
    assert add(tc, TID, pid, epoch, TOPIC) == 0
    first = produce(leader, pid, epoch, 0)
    assert first["ErrorCode"] == 0
    view = committed_view(leader)
    assert view["lso"] == first["BaseOffset"] < view["hw"]
    body = {"TransactionalId": TID, "ProducerId": pid, "ProducerEpoch": epoch, "GroupId": GROUP}
    assert settled(tc, ApiKey.ADD_OFFSETS_TO_TXN, 3, body)["ErrorCode"] == 0
    gc = wait_until(
        lambda: (
            (r := call(any_broker, ApiKey.FIND_COORDINATOR, 3, {"Key": GROUP, "KeyType": 0}))[
                "ErrorCode"
            ]
            == 0
            and (r["Host"], r["Port"])
        ),
        timeout=20,
    )
    commit = {
        "TransactionalId": TID,
        "GroupId": GROUP,
        "ProducerId": pid,
        "ProducerEpoch": epoch,
        "GenerationIdOrMemberEpoch": -1,
        "MemberId": "",
        "GroupInstanceId": None,
        "Topics": [
            {
                "Name": TOPIC,
                "Partitions": [
                    {
                        "PartitionIndex": 0,
                        "CommittedOffset": 1,
                        "CommittedLeaderEpoch": -1,
                        "CommittedMetadata": "",
                    }
                ],
            }
        ],
    }
    r = call(gc, ApiKey.TXN_OFFSET_COMMIT, 3, commit)
    assert r["Topics"][0]["Partitions"][0]["ErrorCode"] == 0
    assert group_offset(gc, stable=False) == (-1, 0)
    assert group_offset(gc, stable=True) == (-1, E.UNSTABLE_OFFSET_COMMIT)

    assert end(tc, pid, epoch, commit=True) == 0
    assert wait_until(lambda: group_offset(gc, stable=True) == (1, 0), timeout=20)
    view = wait_until(lambda: (v := committed_view(leader))["lso"] == v["hw"] and v, timeout=20)
    assert view["aborted"] == []

    # the next transaction aborts: its range is listed to read_committed consumers
    second = settled(tc, ApiKey.ADD_PARTITIONS_TO_TXN, 3, add_body(pid, epoch))
    assert second["ResultsByTopicV3AndBelow"][0]["ResultsByPartition"][0]["PartitionErrorCode"] == 0
    aborted = produce(leader, pid, epoch, 1)
    assert aborted["ErrorCode"] == 0
    assert end(tc, pid, epoch, commit=False) == 0
    view = wait_until(lambda: (v := committed_view(leader))["lso"] == v["hw"] and v, timeout=20)
    assert view["aborted"] == [(pid, aborted["BaseOffset"])]

    described = call(
        leader, ApiKey.DESCRIBE_PRODUCERS, 0, {"Topics": [{"Name": TOPIC, "PartitionIndexes": [0]}]}
    )
    (state,) = described["Topics"][0]["Partitions"][0]["ActiveProducers"]
    assert (state["ProducerId"], state["LastSequence"], state["CurrentTxnStartOffset"]) == (
        pid,
        1,
        -1,
    )


def add_body(pid: int, epoch: int) -> dict:
    return {
        "V3AndBelowTransactionalId": TID,
        "V3AndBelowProducerId": pid,
        "V3AndBelowProducerEpoch": epoch,
        "V3AndBelowTopics": [{"Name": TOPIC, "Partitions": [0]}],
    }
