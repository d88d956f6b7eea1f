"""The transaction coordinator's own answers (TXN.R1, R2, R12): found with FindCoordinator's
transaction key type, it registers a transactional id with InitProducerId, bumps the epoch when
asked again, and refuses to end a transaction that never began."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.txn.txns import CLASSIC_END, TxnProducer, name


@conformance("txn/coordinator/init-producer-id", "TXN.R1", api=ApiKey.INIT_PRODUCER_ID)
def test_the_coordinator_registers_a_transactional_id(harness: Harness) -> None:
    harness.pick_version(ApiKey.FIND_COORDINATOR, "1+")
    producer = TxnProducer.start(harness, "coordinator", "TXN.R1")
    verify.ran(
        f"{producer.tid}: coordinator {producer.coordinator}, producer id {producer.pid}, "
        f"epoch {producer.epoch}",
        "TXN.R1",
    )


@conformance("txn/coordinator/epoch-bump", "TXN.R2", api=ApiKey.INIT_PRODUCER_ID)
def test_init_again_bumps_the_epoch(harness: Harness) -> None:
    producer = TxnProducer.start(harness, "epoch", "TXN.R2")
    first = (producer.pid, producer.epoch)
    answer = producer.init()
    second = (answer["ProducerId"], answer["ProducerEpoch"])
    verify.check(
        answer["ErrorCode"] == ErrorCode.NONE
        and (
            (second[0] == first[0] and second[1] > first[1])
            or (second[0] != first[0] and second[0] >= 0 and second[1] >= 0)
        ),
        f"InitProducerId of {producer.tid} again: ErrorCode {name(answer['ErrorCode'])}, "
        f"(producer id, epoch) {second} after {first}; expected 0 and the same id with a "
        "higher epoch",
        "TXN.R2",
    )


@conformance("txn/coordinator/end-without-transaction", "TXN.R12", api=ApiKey.END_TXN)
def test_end_without_a_transaction_is_refused(harness: Harness) -> None:
    harness.pick_version(ApiKey.END_TXN, CLASSIC_END)
    producer = TxnProducer.start(harness, "empty-end", "TXN.R12")
    code = producer.end(True)
    verify.check(
        code == ErrorCode.INVALID_TXN_STATE,
        f"EndTxn (commit) of {producer.tid} with nothing added since InitProducerId "
        f"(producer {producer.pid}, epoch {producer.epoch}): ErrorCode {name(code)}, expected "
        "48 (INVALID_TXN_STATE)",
        "TXN.R12",
    )
