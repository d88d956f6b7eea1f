"""The coordinator's view of a transaction (TXN.R13): DescribeTransactions of an open one names
its state, producer, timeout and partitions; ListTransactions of the coordinator lists it; once
committed it is described CompleteCommit."""

from __future__ import annotations

import time

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import SuiteTopic
from conformance.suite.txn import txns
from conformance.suite.txn.txns import TxnProducer

REQ = "TXN.R13"


def describe(producer: TxnProducer) -> dict:
    version = producer.harness.pick_version(ApiKey.DESCRIBE_TRANSACTIONS)
    body = {"TransactionalIds": [producer.tid]}
    answer = verify.expect_response(
        producer.conn(), ApiKey.DESCRIBE_TRANSACTIONS, version, body, served=REQ
    ).body
    states = answer["TransactionStates"]
    verify.check(
        len(states) == 1 and states[0]["TransactionalId"] == producer.tid,
        f"DescribeTransactions of {producer.tid}: {len(states)} entries "
        f"({[s['TransactionalId'] for s in states]}), expected one for it",
        REQ,
    )
    return states[0]


@conformance("txn/describe/ongoing-then-complete", REQ, api=ApiKey.DESCRIBE_TRANSACTIONS)
def test_the_coordinator_describes_the_transaction(harness: Harness) -> None:
    harness.pick_version(ApiKey.DESCRIBE_TRANSACTIONS)
    list_version = harness.pick_version(ApiKey.LIST_TRANSACTIONS)
    with SuiteTopic.create(harness, "txn-describe", 1) as topic:
        producer = TxnProducer.start(harness, "describe", REQ, timeout_ms=45000)
        producer.begin(topic, [0])
        producer.produce_ok(topic, 0, [b"described"])
        state = describe(producer)
        partitions = {(t["Topic"], p) for t in state["Topics"] for p in t["Partitions"]}
        got = (
            state["ErrorCode"],
            state["TransactionState"],
            state["ProducerId"],
            state["ProducerEpoch"],
            state["TransactionTimeoutMs"],
            sorted(partitions),
        )
        want = (
            ErrorCode.NONE,
            "Ongoing",
            producer.pid,
            producer.epoch,
            45000,
            [(topic.name, 0)],
        )
        verify.check(
            got == want,
            f"DescribeTransactions of {producer.tid} while open: (error, state, producer id, "
            f"epoch, timeout, partitions) {got}, expected {want}",
            REQ,
        )
        body = {"StateFilters": [], "ProducerIdFilters": [], "DurationFilter": -1}
        listed = verify.expect_response(
            producer.conn(), ApiKey.LIST_TRANSACTIONS, list_version, body, served=REQ
        ).body
        entries = {s["TransactionalId"]: s["ProducerId"] for s in listed["TransactionStates"]}
        verify.check(
            listed["ErrorCode"] == ErrorCode.NONE and entries.get(producer.tid) == producer.pid,
            f"ListTransactions of the coordinator {producer.coordinator}: error "
            f"{listed['ErrorCode']}, {producer.tid} listed with producer id "
            f"{entries.get(producer.tid)}; expected 0 and {producer.pid}",
            REQ,
        )
        producer.end_ok(True, REQ)
        txns.settled(topic, 0, REQ)
        deadline = time.monotonic() + txns.SETTLE
        state = describe(producer)
        while state["TransactionState"] != "CompleteCommit" and time.monotonic() < deadline:
            time.sleep(0.1)
            state = describe(producer)
        verify.check(
            (state["ErrorCode"], state["TransactionState"]) == (ErrorCode.NONE, "CompleteCommit"),
            f"DescribeTransactions of {producer.tid} after EndTxn committed: (error, state) "
            f"({state['ErrorCode']}, {state['TransactionState']}), expected (0, CompleteCommit)",
            REQ,
        )
