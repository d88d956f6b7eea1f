"""Commit, abort and what consumers read (TXN.R4, R5; R7 on a partition of its own): plain
records, a transaction committed while another is open on the partition, that other one
aborted, and a later committed one. Every transaction ends with its marker; read_committed gets
the plain and committed records in offset order and nothing aborted, the aborted transaction
being listed from its first offset; read_uncommitted gets everything and no aborted list."""

from __future__ import annotations

from dataclasses import dataclass

from conformance.protocol import ApiKey
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import SuiteTopic, now_ms
from conformance.suite.txn import txns
from conformance.suite.txn.txns import ABORT, COMMIT, TxnProducer

REQS = ("TXN.R4", "TXN.R5")
#: every data record the scenario writes, in offset order
WRITTEN = [
    b"plain-0",
    b"aborted-0",
    b"aborted-1",
    b"committed-0",
    b"aborted-2",
    b"committed-1",
    b"plain-1",
]


@dataclass
class Written:
    """What the scenario wrote: the producers, and offsets the checks refer to."""

    aborting: TxnProducer
    committing: TxnProducer
    first_aborted: int
    last_aborted: int
    last_committed: int
    later: int
    stable: txns.Read


def pick_versions(harness: Harness) -> None:
    harness.pick_version(ApiKey.END_TXN, txns.CLASSIC_END)
    harness.pick_version(ApiKey.ADD_PARTITIONS_TO_TXN, txns.ADD_PARTITIONS_VERSIONS)
    harness.pick_version(ApiKey.FETCH, "4-12")
    harness.pick_version(ApiKey.PRODUCE, txns.CLASSIC_PRODUCE)


def write(harness: Harness, topic: SuiteTopic, *reqs: str) -> Written:
    """Plain records, a transaction committed while another is open, that one aborted, a
    later one committed; the partition then stable."""
    aborting = TxnProducer.start(harness, "aborting", *reqs)
    committing = TxnProducer.start(harness, "committing", *reqs)
    topic.produce_ok(0, [(now_ms(), None, b"plain-0")], *reqs)
    aborting.begin(topic, [0])
    first_aborted = aborting.produce_ok(topic, 0, [b"aborted-0", b"aborted-1"])
    committing.begin(topic, [0])
    last_committed = committing.produce_ok(topic, 0, [b"committed-0"])
    last_aborted = aborting.produce_ok(topic, 0, [b"aborted-2"])
    committing.end_ok(True)
    aborting.end_ok(False)
    txns.settled(topic, 0, *reqs)
    aborting.begin(topic, [0])
    later = aborting.produce_ok(topic, 0, [b"committed-1"])
    aborting.end_ok(True)
    topic.produce_ok(0, [(now_ms(), None, b"plain-1")], *reqs)
    stable = txns.settled(topic, 0, *reqs)
    return Written(aborting, committing, first_aborted, last_aborted, last_committed, later, stable)


@conformance("txn/markers/commit-and-abort", *REQS, api=ApiKey.END_TXN)
def test_commit_and_abort_as_consumers_read_them(harness: Harness) -> None:
    pick_versions(harness)
    with SuiteTopic.create(harness, "txn-markers", 1) as topic:
        w = write(harness, topic, *REQS)
        aborting, committing = w.aborting, w.committing
        last_aborted, last_committed, later, stable = (
            w.last_aborted,
            w.last_committed,
            w.later,
            w.stable,
        )
        committed = txns.read_all(topic, 0, txns.READ_COMMITTED, *REQS)
        marks = txns.markers(committed)
        by_producer = {
            p.pid: [(o, k) for o, pid, k in marks if pid == p.pid] for p in (aborting, committing)
        }
        expected_kinds = {aborting.pid: [ABORT, COMMIT], committing.pid: [COMMIT]}
        kinds = {pid: [k for _, k in got] for pid, got in by_producer.items()}
        after = {
            aborting.pid: [last_aborted, later],
            committing.pid: [last_committed],
        }
        placed = all(
            len(got) == len(after[pid])
            and all(o > last for (o, _), last in zip(got, after[pid], strict=False))
            for pid, got in by_producer.items()
        )
        verify.check(
            kinds == expected_kinds and placed and stable.high_watermark == later + 3,
            f"markers in {topic.name}-0 (offset, type) per producer {by_producer}, high "
            f"watermark {stable.high_watermark}; expected ABORT then COMMIT from producer "
            f"{aborting.pid} (after offsets {after[aborting.pid]}) and COMMIT from "
            f"{committing.pid} (after {last_committed}), high watermark {later + 3}",
            "TXN.R4",
        )
        got = txns.consumed(committed)
        values = [v for _, v in got]
        offsets = [o for o, _ in got]
        verify.check(
            values == [b"plain-0", b"committed-0", b"committed-1", b"plain-1"]
            and offsets == sorted(offsets),
            f"a read_committed consumer of {topic.name}-0 from offset 0 gets {got}; expected "
            "plain-0, committed-0, committed-1, plain-1 in offset order and nothing aborted",
            "TXN.R5",
        )


@conformance("txn/markers/aborted-ranges", "TXN.R7", api=ApiKey.FETCH)
def test_aborted_transactions_are_listed_to_read_committed(harness: Harness) -> None:
    pick_versions(harness)
    with SuiteTopic.create(harness, "txn-aborted", 1) as topic:
        w = write(harness, topic, "TXN.R7")
        aborting, first_aborted = w.aborting, w.first_aborted
        committed = txns.read_all(topic, 0, txns.READ_COMMITTED, "TXN.R7")
        listed = committed[0].aborted
        verify.check(
            (aborting.pid, first_aborted) in listed,
            f"read_committed Fetch of {topic.name}-0 from offset 0 lists aborted transactions "
            f"{listed}, expected ({aborting.pid}, {first_aborted})",
            "TXN.R7",
        )
        uncommitted = txns.read_all(topic, 0, txns.READ_UNCOMMITTED, "TXN.R7")
        everything = txns.data_values(uncommitted)
        lists = [read.aborted for read in uncommitted if read.aborted]
        verify.check(
            everything == WRITTEN and not lists,
            f"read_uncommitted of {topic.name}-0 returns {everything} and aborted lists "
            f"{lists}; expected every record written, in order, and no aborted list",
            "TXN.R7",
        )
