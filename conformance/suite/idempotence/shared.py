"""The idempotent producer's steps, for the IDEMPOTENCE tests and the DURABILITY scenarios: a
producer id from InitProducerId (retried while the broker has none to give yet), and batches
carrying it."""

from __future__ import annotations

import time

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.partitions import batch_bytes, now_ms
from conformance.suite.kit.records_io import quiet_version

#: what a broker answers while it has no producer id to give yet (Apache Kafka's brokers ask
#: the controller for a block of ids asynchronously and answer this until it comes); a producer
#: retries it, and so does the suite, for at most RETRY_FOR seconds
NOT_READY_YET = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE)
RETRY_FOR = 15.0


def init_producer_id(harness: Harness, req: str, *, quiet: bool = False) -> tuple[int, dict]:
    """InitProducerId for idempotence (no transactional id): its version and the first answer
    that is not a retriable "not ready yet" (or the last one, past the deadline). ``quiet``: a
    set-up step, so not the API the test's results name."""
    pick = quiet_version if quiet else Harness.pick_version
    version = pick(harness, ApiKey.INIT_PRODUCER_ID)
    body = {
        "TransactionalId": None,
        "TransactionTimeoutMs": 60000,
        "ProducerId": -1,
        "ProducerEpoch": -1,
    }
    conn = harness.connect()
    deadline = time.monotonic() + RETRY_FOR
    while True:
        answer = verify.expect_response(
            conn, ApiKey.INIT_PRODUCER_ID, version, body, served=req
        ).body
        if answer["ErrorCode"] not in NOT_READY_YET or time.monotonic() > deadline:
            return version, answer
        time.sleep(0.2)


def producer_id(harness: Harness, req: str) -> tuple[int, int]:
    """A producer id and epoch for the Produce checks; the test cannot go on without one (its
    results name Produce, not InitProducerId)."""
    version, answer = init_producer_id(harness, req, quiet=True)
    if (
        answer["ErrorCode"] != ErrorCode.NONE
        or answer["ProducerId"] < 0
        or answer["ProducerEpoch"] < 0
    ):
        raise verify.Failed(
            f"InitProducerId v{version} gave no producer id (ErrorCode {answer['ErrorCode']}, "
            f"ProducerId {answer['ProducerId']}), so no idempotent batch can be sent",
            req,
        )
    return answer["ProducerId"], answer["ProducerEpoch"]


def idempotent(pid: int, epoch: int, sequence: int, values: list[bytes]) -> bytes:
    ts = now_ms()
    return batch_bytes(
        [(ts, None, v) for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
    )
