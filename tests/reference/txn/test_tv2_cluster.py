"""Transactions v2 (KIP-890 part 2) on a running reference cluster, over the wire: the
transaction.version feature in ApiVersions, a partition added by a Produce v12 alone, EndTxn v5's
epoch bump and answer, a late write at the old epoch refused (the hanging-transaction defence),
ListTransactions v2's pattern, InitProducerId v6 with two-phase commit disabled and TxnOffsetCommit
v6 by topic id."""

from __future__ import annotations

import uuid

from conformance.protocol import ApiKey
from conformance.protocol import ErrorCode as E
from reference_impl.launcher import Cluster
from tests.reference.control_plane import call, topic_body, wait_until
from tests.reference.txn.test_data_side import AGAIN, Client

TOPIC, TID = "txn-v2", "txn-v2-producer"


def _top(r: dict) -> int:
    return r["ErrorCode"]


def produce(c: Client, pid: int, epoch: int, seq: int) -> dict:
    """A transactional Produce v12 to partition 0 (no AddPartitionsToTxn before it)."""
    return c.produce(pid, epoch, seq, version=12)


def described(c: Client) -> dict:
    """The transaction's state as DescribeTransactions v0 gives it."""
    return c.ask(
        TID,
        1,
        ApiKey.DESCRIBE_TRANSACTIONS,
        0,
        {"TransactionalIds": [TID]},
        lambda r: r["TransactionStates"][0]["ErrorCode"],
    )["TransactionStates"][0]


def test_transaction_version_2_on_the_wire(shared_cluster: Cluster) -> None:
    c = Client(shared_cluster, TOPIC, TID)
    versions = call(
        c.any_broker(),
        ApiKey.API_VERSIONS,
        3,
        {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"},
    )
    finalized = {f["Name"]: f["MaxVersionLevel"] for f in versions["FinalizedFeatures"]}
    assert finalized.get("transaction.version") == 2 and versions["FinalizedFeaturesEpoch"] >= 0
    ranges = {a["ApiKey"]: a["MaxVersion"] for a in versions["ApiKeys"]}
    assert ranges[ApiKey.END_TXN] == 5 and ranges[ApiKey.PRODUCE] >= 12
    assert ranges[ApiKey.TXN_OFFSET_COMMIT] >= 5 and ranges[ApiKey.LIST_TRANSACTIONS] == 2

    created = call(c.any_broker(), ApiKey.CREATE_TOPICS, 5, topic_body(TOPIC, 1, 3))
    assert created["Topics"][0]["ErrorCode"] == 0
    # Metadata v13 (Kafka 4.4's newest): a top-level ErrorCode
    md = call(c.any_broker(), ApiKey.METADATA, 13, {"Topics": [{"Name": TOPIC}]})
    assert md["ErrorCode"] == 0 and md["Topics"][0]["Name"] == TOPIC
    init = {"TransactionalId": TID, "TransactionTimeoutMs": 60000, "ProducerId": -1}
    # InitProducerId v6: two-phase commit is not enabled on the broker
    r = c.ask(
        TID, 1, ApiKey.INIT_PRODUCER_ID, 6, {**init, "ProducerEpoch": -1, "Enable2Pc": True}, _top
    )
    assert r["ErrorCode"] == E.INVALID_TXN_STATE
    r = c.ask(TID, 1, ApiKey.INIT_PRODUCER_ID, 6, {**init, "ProducerEpoch": -1}, _top)
    assert r["ErrorCode"] == 0 and r["OngoingTxnProducerId"] == -1
    pid, epoch = r["ProducerId"], r["ProducerEpoch"]

    # the Produce adds its partition to the transaction
    assert produce(c, pid, epoch, 0)["ErrorCode"] == 0
    d = described(c)
    assert d["TransactionState"] == "Ongoing"
    assert d["Topics"] == [{"Topic": TOPIC, "Partitions": [0]}]

    # EndTxn v5 bumps the epoch and says so; the abort's marker carries the new epoch
    end = {"TransactionalId": TID, "ProducerId": pid, "ProducerEpoch": epoch, "Committed": False}
    r = c.ask(TID, 1, ApiKey.END_TXN, 5, end, _top)
    assert (r["ErrorCode"], r["ProducerId"], r["ProducerEpoch"]) == (0, pid, epoch + 1)
    # a late write of the aborted transaction (its old epoch) is refused, not a new transaction.
    # Once the abort markers are written: EndTxn answers when PrepareAbort is logged, and until a
    # marker reaches the partition a write at the old epoch still belongs to the transaction
    # being aborted (and is aborted with it), in Kafka as here
    wait_until(lambda: described(c)["TransactionState"] == "CompleteAbort", 30)
    assert produce(c, pid, epoch, 1)["ErrorCode"] == E.INVALID_PRODUCER_EPOCH
    # a retried EndTxn (the old epoch) is NONE with the new ids
    r = c.ask(TID, 1, ApiKey.END_TXN, 5, end, _top)
    assert (r["ErrorCode"], r["ProducerId"], r["ProducerEpoch"]) == (0, pid, epoch + 1)

    # the next transaction at the new epoch (sequence from 0), committed: epoch + 2
    assert produce(c, pid, epoch + 1, 0)["ErrorCode"] == 0
    end = {**end, "ProducerEpoch": epoch + 1, "Committed": True}
    r = c.ask(TID, 1, ApiKey.END_TXN, 5, end, _top)
    assert (r["ErrorCode"], r["ProducerEpoch"]) == (0, epoch + 2)

    # TxnOffsetCommit v6 names topics by id (its group partition added implicitly, v5+); an id
    # the broker does not know is UNKNOWN_TOPIC_ID, entries of one id answered together
    # once the commit's markers are written: until then the coordinator answers a next
    # transaction's offsets CONCURRENT_TRANSACTIONS (51, retriable), in Kafka as here
    wait_until(lambda: described(c)["TransactionState"] == "CompleteCommit", 30)
    topic_id, nowhere = md["Topics"][0]["TopicId"], uuid.UUID(int=7)
    one = {"PartitionIndex": 0, "CommittedOffset": 1, "CommittedMetadata": ""}
    commit = {
        "TransactionalId": TID,
        "GroupId": "txn-v2-group",
        "ProducerId": pid,
        "ProducerEpoch": epoch + 2,
        "Topics": [
            {"TopicId": topic_id, "Partitions": [one]},
            {"TopicId": nowhere, "Partitions": [one]},
            {"TopicId": topic_id, "Partitions": [{**one, "PartitionIndex": 5}]},
        ],
    }
    r = c.ask("txn-v2-group", 0, ApiKey.TXN_OFFSET_COMMIT, 6, commit, lambda r: 0)
    assert [
        (t["TopicId"], [(p["PartitionIndex"], p["ErrorCode"]) for p in t["Partitions"]])
        for t in r["Topics"]
    ] == [
        (topic_id, [(0, 0), (5, E.UNKNOWN_TOPIC_OR_PARTITION)]),
        (nowhere, [(0, E.UNKNOWN_TOPIC_ID)]),
    ], r
    end = {**end, "ProducerEpoch": epoch + 2, "Committed": True}
    assert c.ask(TID, 1, ApiKey.END_TXN, 5, end, _top)["ErrorCode"] == 0

    # ListTransactions v2: the whole id must match the pattern
    def listed(pattern: str | None) -> tuple[int, list[str]]:
        body = {
            "StateFilters": [],
            "ProducerIdFilters": [],
            "DurationFilter": -1,
            "TransactionalIdPattern": pattern,
        }
        found, code = [], 0
        for node in shared_cluster.broker_nodes():
            r = call(shared_cluster.broker_address(node), ApiKey.LIST_TRANSACTIONS, 2, body)
            code = code or r["ErrorCode"]
            found += [s["TransactionalId"] for s in r["TransactionStates"]]
        return code, found

    assert TID in wait_until(lambda: (x := listed("txn-v2-.*"))[0] not in AGAIN and x, 30)[1]
    assert TID not in listed("txn-v2")[1]
    assert listed("(")[0] == E.INVALID_REGULAR_EXPRESSION
