"""A transaction left open past its timeout (TXN.R10): the coordinator aborts it on its own,
the partition gets an ABORT marker and becomes stable, read_committed never returns the record,
and the producer, fenced by the abort, cannot commit it afterwards."""

from __future__ import annotations

import time

from conformance.protocol import ApiKey
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import SuiteTopic
from conformance.suite.txn import txns
from conformance.suite.txn.txns import FENCED, TxnProducer, name

REQ = "TXN.R10"
#: the transaction timeout asked for, and how long the abort may take after it (readings)
TIMEOUT_MS, ABORTED_WITHIN = 1000, 30.0


@conformance("txn/timeout/aborted", REQ, api=ApiKey.END_TXN)
def test_an_expired_transaction_is_aborted(harness: Harness) -> None:
    harness.pick_version(ApiKey.END_TXN, txns.CLASSIC_END)
    harness.pick_version(ApiKey.ADD_PARTITIONS_TO_TXN, txns.ADD_PARTITIONS_VERSIONS)
    harness.pick_version(ApiKey.PRODUCE, txns.CLASSIC_PRODUCE)
    with SuiteTopic.create(harness, "txn-timeout", 1) as topic:
        producer = TxnProducer.start(harness, "timeout", REQ, timeout_ms=TIMEOUT_MS)
        producer.begin(topic, [0])
        producer.produce_ok(topic, 0, [b"left-open"])
        start = time.monotonic()
        read = txns.fetch(topic, 0, 0, txns.READ_COMMITTED, REQ)
        while read.last_stable < read.high_watermark and time.monotonic() - start < ABORTED_WITHIN:
            time.sleep(0.25)
            read = txns.fetch(topic, 0, 0, txns.READ_COMMITTED, REQ)
        waited = time.monotonic() - start
        reads = txns.read_all(topic, 0, txns.READ_COMMITTED, REQ)
        kinds = [k for _, pid, k in txns.markers(reads) if pid == producer.pid]
        verify.check(
            read.last_stable == read.high_watermark and kinds == [txns.ABORT],
            f"{topic.name}-0, {waited:.1f} s after a write in a transaction with a "
            f"{TIMEOUT_MS} ms timeout: last stable offset {read.last_stable}, high watermark "
            f"{read.high_watermark}, markers of producer {producer.pid} {kinds}; expected the "
            f"transaction aborted (one ABORT marker, the partition stable) within "
            f"{ABORTED_WITHIN:.0f} s",
            REQ,
        )
        values = [v for _, v in txns.consumed(reads)]
        verify.check(
            values == [],
            f"read_committed of {topic.name}-0 after the timeout returned {values}, expected "
            "nothing",
            REQ,
        )
        code = producer.end(True)
        verify.check(
            code in FENCED,
            f"EndTxn (commit) by {producer.tid} at epoch {producer.epoch} after its transaction "
            f"timed out: ErrorCode {name(code)}, expected 90 (PRODUCER_FENCED) or 47 "
            "(INVALID_PRODUCER_EPOCH)",
            REQ,
        )
