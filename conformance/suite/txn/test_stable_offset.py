"""The last stable offset (TXN.R6): plain records, then a transaction opened by one producer
and a later one by another; the last stable offset stays at the first open transaction's first
offset until it ends, then moves to the next open one, then to the high watermark. Fetch and
ListOffsets are read at both isolation levels at each stage."""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import SuiteTopic, now_ms
from conformance.suite.txn import txns
from conformance.suite.txn.txns import TxnProducer

REQ = "TXN.R6"


def judge(topic: SuiteTopic, stage: str, expected_lso: int, expected_hw: int) -> None:
    """Fetch (both isolation levels) and ListOffsets (both) of partition 0 at one stage."""
    rc = txns.fetch(topic, 0, 0, txns.READ_COMMITTED, REQ)
    past = [r.offset for b in rc.batches for r in b.log_records() if r.offset >= expected_lso]
    verify.check(
        rc.last_stable == expected_lso
        and rc.high_watermark == expected_hw
        and rc.last_stable <= rc.high_watermark
        and not past,
        f"{stage}: read_committed Fetch of {topic.name}-0 answered LastStableOffset "
        f"{rc.last_stable}, HighWatermark {rc.high_watermark}, records at offsets {past} at or "
        f"past {expected_lso}; expected {expected_lso}, {expected_hw} and none",
        REQ,
    )
    ru = txns.fetch(topic, 0, 0, txns.READ_UNCOMMITTED, REQ)
    verify.check(
        ru.high_watermark == expected_hw,
        f"{stage}: read_uncommitted Fetch of {topic.name}-0 answered HighWatermark "
        f"{ru.high_watermark}, expected {expected_hw}",
        REQ,
    )
    listed = (
        txns.list_latest(topic, 0, txns.READ_COMMITTED, REQ),
        txns.list_latest(topic, 0, txns.READ_UNCOMMITTED, REQ),
    )
    got = [(p["ErrorCode"], p["Offset"]) for p in listed]
    verify.check(
        got == [(0, expected_lso), (0, expected_hw)],
        f"{stage}: ListOffsets LATEST of {topic.name}-0, read_committed then read_uncommitted, "
        f"answered (ErrorCode, Offset) {got}; expected (0, {expected_lso}) and "
        f"(0, {expected_hw})",
        REQ,
    )


@conformance("txn/stable-offset/first-open-transaction", REQ, api=ApiKey.FETCH)
def test_the_last_stable_offset_stops_at_the_first_open_transaction(harness: Harness) -> None:
    harness.pick_version(ApiKey.FETCH, "4-12")
    harness.pick_version(ApiKey.LIST_OFFSETS, "2+")
    harness.pick_version(ApiKey.ADD_PARTITIONS_TO_TXN, txns.ADD_PARTITIONS_VERSIONS)
    harness.pick_version(ApiKey.PRODUCE, txns.CLASSIC_PRODUCE)
    with SuiteTopic.create(harness, "txn-lso", 1) as topic:
        ts = now_ms()
        topic.produce_ok(0, [(ts, None, b"plain-0"), (ts, None, b"plain-1")], REQ)
        judge(topic, "two plain records, no transaction", 2, 2)
        first = TxnProducer.start(harness, "lso-first", REQ)
        second = TxnProducer.start(harness, "lso-second", REQ)
        first.begin(topic, [0])
        at = first.produce_ok(topic, 0, [b"first-0", b"first-1"])
        judge(topic, "a transaction open from offset 2", at, at + 2)
        second.begin(topic, [0])
        then = second.produce_ok(topic, 0, [b"second-0"])
        judge(topic, "a second transaction open from offset 4", at, then + 1)
        first.end_ok(True)
        # the first one's marker follows the second one's record: the second is now first
        txns.grown(topic, 0, then + 2, REQ)
        judge(topic, "the first transaction committed, the second still open", then, then + 2)
        second.end_ok(False)
        txns.settled(topic, 0, REQ)
        judge(topic, "both transactions ended", then + 3, then + 3)
