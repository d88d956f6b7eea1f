"""The idempotent producer against the partition leader (IDEMPOTENCE.R1-R4): a producer id from
InitProducerId, then batches carrying it with sequences that continue, repeat, skip ahead, or
an epoch that went back; each on a fresh suite topic."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.idempotence.shared import (
    idempotent,
    init_producer_id,
    producer_id,
)
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import (
    PRODUCE_ANY,
    PRODUCE_VERSIONS,
    SuiteTopic,
    oldest_and_newest,
)


def appended(topic: SuiteTopic, req: str) -> list[bytes | None]:
    return [r.value for r in topic.fetch_all(0, req)]


@conformance("idempotence/init-producer-id", "IDEMPOTENCE.R1", api=ApiKey.INIT_PRODUCER_ID)
def test_init_producer_id_gives_an_id(harness: Harness) -> None:
    version, answer = init_producer_id(harness, "IDEMPOTENCE.R1")
    verify.check(
        answer["ErrorCode"] == ErrorCode.NONE
        and answer["ProducerId"] >= 0
        and answer["ProducerEpoch"] >= 0,
        f"InitProducerId v{version} without a transactional id: ErrorCode "
        f"{answer['ErrorCode']}, ProducerId {answer['ProducerId']}, ProducerEpoch "
        f"{answer['ProducerEpoch']}; expected 0 and an id and epoch >= 0",
        "IDEMPOTENCE.R1",
    )


@conformance("idempotence/produce/retry-not-duplicated", "IDEMPOTENCE.R2", api=ApiKey.PRODUCE)
def test_a_retried_batch_is_acknowledged_once(harness: Harness) -> None:
    """At the oldest and the newest Produce version the target advertises (issue 37; v13+ names
    the topic by id), each with a producer id of its own."""
    harness.pick_version(ApiKey.INIT_PRODUCER_ID)
    harness.require(ApiKey.PRODUCE)
    with SuiteTopic.create(harness, "idempotence-retry") as topic:
        by_id = topic.topic_id is not None
        expected: list[bytes] = []
        for v in oldest_and_newest(harness, ApiKey.PRODUCE, PRODUCE_ANY, by_id):
            pid, epoch = producer_id(harness, "IDEMPOTENCE.R2")
            base = len(expected)
            sent = [f"a{v}".encode(), f"b{v}".encode()]
            first = idempotent(pid, epoch, 0, sent)
            answers = [topic.produce(0, first, "IDEMPOTENCE.R2", version=v) for _ in range(2)]
            got = [(a["ErrorCode"], a["BaseOffset"]) for a in answers]
            verify.check(
                got == [(ErrorCode.NONE, base), (ErrorCode.NONE, base)],
                f"the same idempotent batch (producer {pid}, epoch {epoch}, sequences 0-1) sent "
                f"twice to {topic.name}-0 at Produce v{v}: answered (ErrorCode, BaseOffset) "
                f"{got}, expected ({ErrorCode.NONE}, {base}) both times",
                "IDEMPOTENCE.R2",
            )
            expected += sent
            values = appended(topic, "IDEMPOTENCE.R2")
            verify.check(
                values == expected,
                f"after the retry at Produce v{v} {topic.name}-0 holds {values}, expected "
                f"{expected}",
                "IDEMPOTENCE.R2",
            )


@conformance("idempotence/produce/sequence-gap-refused", "IDEMPOTENCE.R3", api=ApiKey.PRODUCE)
def test_a_sequence_gap_is_refused(harness: Harness) -> None:
    harness.pick_version(ApiKey.INIT_PRODUCER_ID)
    harness.pick_version(ApiKey.PRODUCE, PRODUCE_VERSIONS)
    pid, epoch = producer_id(harness, "IDEMPOTENCE.R3")
    with SuiteTopic.create(harness, "idempotence-gap") as topic:
        ok = topic.produce(0, idempotent(pid, epoch, 0, [b"s0", b"s1"]), "IDEMPOTENCE.R3")
        gap = topic.produce(0, idempotent(pid, epoch, 5, [b"s5"]), "IDEMPOTENCE.R3")
        verify.check(
            (ok["ErrorCode"], gap["ErrorCode"])
            == (ErrorCode.NONE, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
            f"producer {pid} epoch {epoch}: sequences 0-1 then 5 (2 expected) to {topic.name}-0: "
            f"ErrorCodes {ok['ErrorCode']} and {gap['ErrorCode']}, expected 0 and 45 "
            "(OUT_OF_ORDER_SEQUENCE_NUMBER)",
            "IDEMPOTENCE.R3",
        )
        values = appended(topic, "IDEMPOTENCE.R3")
        verify.check(
            values == [b"s0", b"s1"],
            f"after the refused batch {topic.name}-0 holds {values}, expected [b's0', b's1']",
            "IDEMPOTENCE.R3",
        )


@conformance("idempotence/produce/older-epoch-fenced", "IDEMPOTENCE.R4", api=ApiKey.PRODUCE)
def test_an_older_epoch_is_fenced(harness: Harness) -> None:
    harness.pick_version(ApiKey.INIT_PRODUCER_ID)
    harness.pick_version(ApiKey.PRODUCE, PRODUCE_VERSIONS)
    pid, epoch = producer_id(harness, "IDEMPOTENCE.R4")
    with SuiteTopic.create(harness, "idempotence-epoch") as topic:
        old = topic.produce(0, idempotent(pid, epoch, 0, [b"old"]), "IDEMPOTENCE.R4")
        new = topic.produce(0, idempotent(pid, epoch + 1, 0, [b"new"]), "IDEMPOTENCE.R4")
        stale = topic.produce(0, idempotent(pid, epoch, 1, [b"stale"]), "IDEMPOTENCE.R4")
        codes = (old["ErrorCode"], new["ErrorCode"], stale["ErrorCode"])
        verify.check(
            codes == (ErrorCode.NONE, ErrorCode.NONE, ErrorCode.INVALID_PRODUCER_EPOCH),
            f"producer {pid} to {topic.name}-0: epoch {epoch} seq 0, epoch {epoch + 1} seq 0, "
            f"then epoch {epoch} seq 1 again: ErrorCodes {codes}, expected 0, 0 and 47 "
            "(INVALID_PRODUCER_EPOCH)",
            "IDEMPOTENCE.R4",
        )
        values = appended(topic, "IDEMPOTENCE.R4")
        verify.check(
            values == [b"old", b"new"],
            f"after the fenced batch {topic.name}-0 holds {values}, expected [b'old', b'new']",
            "IDEMPOTENCE.R4",
        )
