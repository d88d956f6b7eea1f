"""KIP-932's share.isolation.level group config: a read_committed share group is delivered only
committed records (below the last stable offset, none of an aborted transaction); a
read_uncommitted one (the default) everything up to the high watermark."""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.suite.consumer_groups.shared import topic_ids
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import SuiteTopic, now_ms
from conformance.suite.share_groups.shared import ShareGroup, ShareSession, offsets, served
from conformance.suite.txn import txns
from conformance.suite.txn.txns import TxnProducer

REQ = "SHARE-GROUPS.R22"


def delivered(harness: Harness, topic: str, level: str, expect: int) -> list[int]:
    """A fresh share group (earliest, ``level``) on ``topic``: the offsets one member acquires
    until it holds ``expect`` of them (bounded), and one fetch more."""
    tid = topic_ids(harness, [topic])[topic]
    g = ShareGroup(harness, [topic])
    g.configured({"share.auto.offset.reset": "earliest", "share.isolation.level": level}, REQ)
    m = g.new_member()
    g.join(m, {(tid, 0)}, REQ)
    s = ShareSession(g, m, topic, tid)
    held = s.acquire(expect, timeout=8)
    held += offsets(s.fetch(wait_ms=300))
    s.close()
    g.leave(m)
    return sorted(held)


@conformance("share-groups/isolation/read-committed", REQ, api=ApiKey.SHARE_FETCH)
def test_read_committed_share_groups(harness: Harness) -> None:
    served(harness)
    harness.pick_version(ApiKey.ADD_PARTITIONS_TO_TXN, txns.ADD_PARTITIONS_VERSIONS)
    harness.pick_version(ApiKey.PRODUCE, txns.CLASSIC_PRODUCE)
    with SuiteTopic.create(harness, "sgisolation", 1, exact=True) as topic:
        plain = topic.produce_ok(0, [(now_ms(), None, b"plain")], REQ)
        aborted, committed, still_open = (
            TxnProducer.start(harness, f"sg-{what}", REQ) for what in ("abort", "commit", "open")
        )
        aborted.begin(topic, [0])
        a = aborted.produce_ok(topic, 0, [b"aborted-0", b"aborted-1"])
        aborted.end_ok(False)
        committed.begin(topic, [0])
        c = committed.produce_ok(topic, 0, [b"committed-0", b"committed-1"])
        committed.end_ok(True)
        txns.settled(topic, 0, REQ)
        still_open.begin(topic, [0])
        o = still_open.produce_ok(topic, 0, [b"open-0"])
        try:
            rc = delivered(harness, topic.name, "read_committed", 3)
            ru = delivered(harness, topic.name, "read_uncommitted", 6)
        finally:
            still_open.end_ok(False)
    want = [plain, c, c + 1]
    everything = sorted([plain, a, a + 1, c, c + 1, o])
    # Kafka 4.4.0's acquired ranges cover the transaction markers' offsets too (the client
    # skips them): only records are judged
    markers = set(range(plain, o + 1)) - set(everything)
    rc, ru = [x for x in rc if x not in markers], [x for x in ru if x not in markers]
    seen = (
        f"a plain record at {plain}, an aborted transaction's at {a}-{a + 1}, a committed "
        f"one's at {c}-{c + 1}, an open one's at {o}; read_committed delivered {rc}, "
        f"read_uncommitted {ru}"
    )
    verify.check(
        rc == want,
        f"a share group with share.isolation.level read_committed must be delivered exactly the "
        f"committed records {want} (markers {sorted(markers)} aside): {seen}",
        REQ,
    )
    verify.check(
        ru == everything,
        f"a share group with share.isolation.level read_uncommitted must be delivered every "
        f"record up to the high watermark {everything} (markers aside): {seen}",
        REQ,
    )
