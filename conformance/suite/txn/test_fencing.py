"""Zombie fencing and the server-side defence (TXN.R3, R11): a producer instance fenced by a
newer InitProducerId of its transactional id can neither write, nor add partitions, nor end
its transaction, which the new instance's InitProducerId aborted; a transactional batch for a
partition never added to the transaction is refused."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import SuiteTopic
from conformance.suite.txn import txns
from conformance.suite.txn.txns import FENCED, TxnProducer, name

#: what refuses a batch for a partition not in the transaction (see the TXN readings)
NOT_IN_TRANSACTION = frozenset({ErrorCode.INVALID_TXN_STATE, ErrorCode.TRANSACTION_ABORTABLE})


@conformance("txn/fencing/older-epoch-refused", "TXN.R3", api=ApiKey.END_TXN)
def test_a_fenced_producer_is_refused(harness: Harness) -> None:
    for api_key, within in (
        (ApiKey.END_TXN, txns.CLASSIC_END),
        (ApiKey.ADD_PARTITIONS_TO_TXN, txns.ADD_PARTITIONS_VERSIONS),
        (ApiKey.PRODUCE, txns.CLASSIC_PRODUCE),
        (ApiKey.INIT_PRODUCER_ID, None),
    ):
        harness.pick_version(api_key, within)
    with SuiteTopic.create(harness, "txn-fence", 2) as topic:
        old = TxnProducer.start(harness, "fence", "TXN.R3")
        old.begin(topic, [0])
        old.produce_ok(topic, 0, [b"zombie-0"])
        new = TxnProducer(harness, old.tid, ("TXN.R3",))
        answer = new.init()
        verify.check(
            answer["ErrorCode"] == ErrorCode.NONE,
            f"InitProducerId of {old.tid} by a second instance: ErrorCode "
            f"{name(answer['ErrorCode'])}, expected 0",
            "TXN.R3",
        )
        write = old.produce(topic, 0, [b"zombie-1"], "TXN.R3")
        add = old.add_partitions(topic.name, [1])
        end = old.end(True)
        got = (write["ErrorCode"], sorted(add.values()), end)
        verify.check(
            write["ErrorCode"] in FENCED and set(add.values()) <= FENCED and add and end in FENCED,
            f"producer {old.pid} at its fenced epoch {old.epoch} (the new instance has "
            f"{new.epoch}): Produce, AddPartitionsToTxn and EndTxn answered {got}, expected "
            "47 (INVALID_PRODUCER_EPOCH) or 90 (PRODUCER_FENCED) for each",
            "TXN.R3",
        )
        read = txns.settled(topic, 0, "TXN.R3")
        reads = txns.read_all(topic, 0, txns.READ_COMMITTED, "TXN.R3")
        kinds = [kind for _, pid, kind in txns.markers(reads) if pid == old.pid]
        verify.check(
            read.last_stable == read.high_watermark and kinds == [txns.ABORT],
            f"{topic.name}-0 after the fence: last stable offset {read.last_stable}, high "
            f"watermark {read.high_watermark}, markers of producer {old.pid} {kinds}; expected "
            "the zombie's transaction aborted (one ABORT marker, the partition stable)",
            "TXN.R3",
        )
        values = [v for _, v in txns.consumed(reads)]
        verify.check(
            values == [],
            f"read_committed of {topic.name}-0 after the fence returned {values}, expected "
            "nothing of the fenced producer",
            "TXN.R3",
        )
        everything = txns.data_values(reads)
        verify.check(
            b"zombie-1" not in everything,
            f"{topic.name}-0 holds {everything}: the fenced epoch's write was appended",
            "TXN.R3",
        )


@conformance("txn/fencing/partition-not-added", "TXN.R11", api=ApiKey.PRODUCE)
def test_a_partition_not_added_is_refused(harness: Harness) -> None:
    harness.pick_version(ApiKey.PRODUCE, txns.CLASSIC_PRODUCE)
    with SuiteTopic.create(harness, "txn-not-added", 1) as topic:
        producer = TxnProducer.start(harness, "not-added", "TXN.R11")
        part = producer.produce(topic, 0, [b"stray"], "TXN.R11")
        verify.check(
            part["ErrorCode"] in NOT_IN_TRANSACTION,
            f"transactional Produce to {topic.name}-0, never added to {producer.tid}'s "
            f"transaction: ErrorCode {name(part['ErrorCode'])}, expected 48 (INVALID_TXN_STATE) "
            "or 120 (TRANSACTION_ABORTABLE)",
            "TXN.R11",
        )
        read = txns.fetch(topic, 0, 0, txns.READ_UNCOMMITTED, "TXN.R11")
        verify.check(
            read.high_watermark == 0 and not read.batches,
            f"after the refused batch {topic.name}-0 has high watermark {read.high_watermark} "
            f"and {len(read.batches)} batches, expected 0 and none",
            "TXN.R11",
        )
